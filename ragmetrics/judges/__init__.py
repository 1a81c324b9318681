"""Judges that label (query, document) pairs: rules, a learned model, a registered model endpoint, a callable;
each label carries its provenance and is never taken for a human's."""
