"""SimFS: an in-memory filesystem with a real crash model.

:mod:`~dsh_sim.adapters.simfs.disk` holds the storage that outlives processes (volatile and durable
content per file, volatile and durable entries per directory); :mod:`~dsh_sim.adapters.simfs.view`
is one process's view of it, the simulated adapter of the runtime's filesystem port;
:mod:`~dsh_sim.adapters.simfs.crash` enumerates and applies the post-crash states the model allows.
"""

from dsh_sim.adapters.simfs.crash import PowerCut, TornCut, crash_states
from dsh_sim.adapters.simfs.disk import Disk, DiskImage, FidelityError
from dsh_sim.adapters.simfs.view import FsFault, ProcessView

__all__ = ["Disk", "DiskImage", "FidelityError", "FsFault", "PowerCut", "ProcessView", "TornCut", "crash_states"]
