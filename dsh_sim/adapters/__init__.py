"""The simulator's side of the runtime's ports: SimFS (:mod:`.simfs`), the simulated world and
its tools (:mod:`.world`, :mod:`.world_tools`), the scripted model, the approval answerer, the
gate that turns a port call into a named point.  Faults enter here, never in the runtime."""
