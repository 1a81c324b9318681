"""The stateful middle: the workspace over the store, the bundled samples, alignments and prefetching."""
