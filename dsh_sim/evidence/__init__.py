"""Judgement: the checker attached to a simulation (:mod:`.checker`), the named invariants it
runs (:mod:`.invariants`), the oracles complete by construction they lean on (:mod:`.oracles`:
reference model, log grammar, world agreement…), crash coverage and result documents."""
