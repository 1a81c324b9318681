"""From a corpus to candidate evaluation queries: sources sampled across documents, generators (one per kind:
extractive without a model, or a registered model endpoint), and the filters a reviewer sees as flags."""
