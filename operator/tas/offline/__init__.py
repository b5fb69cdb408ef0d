"""The offline front doors, no cluster needed: `tas solve` (scenario), `tas simulate`
(simulate/) and `tas contest` (contest/)."""
