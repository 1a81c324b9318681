"""The foundation every room stands on: errors (:mod:`.errors`), ids and their fingerprints (:mod:`.ids`), the data
model (:mod:`.model`), process memory (:mod:`.memory`), what ``module:attr`` names and where caches live
(:mod:`.importer`), credentials out of URLs (:mod:`.redact`), an HTTP client per thread (:mod:`.clients`) and the
package's version (:mod:`.version`). It imports nothing else of ragmetrics."""
