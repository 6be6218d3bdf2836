"""The published DSH *route* under the simulator: DSH's own agent loop, checkpoint policy,
tools pipeline, approval and JSONL store, composed in one Cordis app by a Node host
(``js/route-host.mjs``) whose file system, clock, model and world are the simulator's.

- :mod:`.points` — the route's named crash points and how dsh-sim's points map onto them;
- :mod:`.program` — a scenario file as the route can run it, or the reason it cannot;
- :mod:`.host` — one Node process of the route and the simulator's answers to it;
- :mod:`.run` — a scenario run on the route, crashes and recoveries included;
- :mod:`.log` — a route run's v0 log as the judges read it;
- :mod:`.judge` — the invariants a route run is held to, against the world's ledger;
- :mod:`.differential` — the same scenario (and the same kill) on dsh-sim's runtime, compared;
- :mod:`.explore` — every crash state of a scenario on the route;
- :mod:`.fuzz` — drawn scenarios on both runtimes, failures shrunk to scenario files;
- :mod:`.findings` — what route runs found about DSH, with standalone reproductions.
"""
