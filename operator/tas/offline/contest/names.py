"""The planners `tas contest --planner` offers (no imports: the CLI reads them at start-up).

"groups" is the placement-group planner of solver/groups.py, the one the Kubernetes side uses
(the gate TASProfileFragmentationAware changes it); the others are rules on the contest's own
greedy engine (greedy.py): the plain baselines (baselines.py) and the growth-aware planner.
"""

BASELINES = ("first-fit", "best-fit", "spread")
GROWTH = "growth"
PLANNERS = (GROWTH, "groups", *BASELINES)
DEFAULT_PLANNER = GROWTH
