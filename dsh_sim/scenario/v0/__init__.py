"""Historical (v0) session logs: a logical description, its v0 bytes, and what migrating it must give.

* :mod:`.model` — the description of a historical session (turns, steps, streams, calls,
  how the log ends, how its last batch was damaged) and the shape vocabulary;
* :mod:`.describe` — a description from the ``seed_v0`` step's knobs;
* :mod:`.plan` — the description as the old runtime logged it, event by event, in meaning;
* :mod:`.render` — the plan as v0 bytes, written the way the reference writer writes them;
* :mod:`.expect` — the v3 events migration must publish, from the plan and the spec alone;
* :mod:`.strategy` — a Hypothesis strategy over the ``seed_v0`` knobs.

The package imports nothing from the runtime's decoder or its migration: the expectation is
an oracle for them.
"""
