"""Study logic on top of sweeps: derived planner figures (metrics), and the tables the
report builds for the siting, ramp-slip and trade-off studies (tables)."""
