"""Oracles that are complete by construction, written from the spec, independent of runtime/.

* :mod:`.spec_log` — a second reader of the log format: strict for what a writer produces
  (format conformance), recovering for what a crash left;
* :mod:`.spec_repair` — the closers the spec's interrupted-turn repair appends;
* :mod:`.reference` — the reference model: the exact recovery a crash state demands;
* :mod:`.grammar` — the well-formed-log state machine;
* :mod:`.agreement` — the log and the world's ledger tell the same story for every call;
* :mod:`.whole_records` — an independent reader counting the whole, contiguous records a medium
  still holds (zstd's streaming reader across frames, not the runtime's decoder).
"""
