"""Choosing translations with a judge: QE reranking and MBR over candidate lists.

:mod:`candidates` reads the input, :mod:`choose` decides (no requests),
:mod:`scorers` scores through the engine or chrF, :mod:`run` runs the rounds and
the held-out guard, :mod:`mbrs_metric` lets mbrs's decoders use a polyjudge
judge (mbrs imported only there, when used). ``polyjudge.api.rerank`` is the
entry point.
"""
