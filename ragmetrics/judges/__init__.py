"""Judges that label (query, document) pairs: rules, a learned model, a registered model endpoint, a callable;
each label carries its provenance and is never taken for a human's.

* :mod:`.base`: the :class:`~.base.Pair` a judge grades, its :class:`~.base.Grade`, the stamped
  :class:`~.base.JudgeLabel` and :func:`~.base.run_judge`;
* :mod:`.registry`: :data:`~.registry.JUDGES`, the one place a judge is added;
* :mod:`.rule`, :mod:`.learned`, :mod:`.endpoint`, :mod:`.call`: the judges.

The labels' provenance is stored by :mod:`ragmetrics.store.provenance`; where people's and a judge's labels meet,
:mod:`ragmetrics.analysis.label_agreement` measures their agreement."""
