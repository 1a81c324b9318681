"""The store: datasets, runs, labels, versions, tags, results and views kept under content ids in SQLite or
PostgreSQL (:mod:`.database`), the stored runs' history (:mod:`.history`) and the share links the CLI prints
(:mod:`.links`, which loads no database library)."""
