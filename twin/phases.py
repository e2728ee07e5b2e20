"""What a node's GPUs are doing: the phase codes shared by the power model and the engine.

The engine stores one phase per node in an ``int8`` array; the power model maps each
phase to a GPU power draw. Codes are stable (they are written to results.nc).
"""

from enum import IntEnum


class Phase(IntEnum):
    """GPU phase of a node.

    OFF            node not powered (not installed, breaker tripped, power plan)
    IDLE           powered, healthy, no job (or burning in between tests)
    TRAINING       steady training steps: compute with overlapped collectives
    COMMUNICATION  exposed, communication-bound part of a step (GPUs mostly waiting)
    CHECKPOINT     writing a checkpoint to storage (GPUs mostly idle)
    RESTART        loading a checkpoint / initialising after an interruption
    BURN_IN        acceptance tests of a newly delivered rack (full GPU load)
    """

    OFF = 0
    IDLE = 1
    TRAINING = 2
    COMMUNICATION = 3
    CHECKPOINT = 4
    RESTART = 5
    BURN_IN = 6
