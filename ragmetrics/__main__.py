from ragmetrics.cli import entry

entry()
