# Compiling a validated library: the plan of jobs, one Triton compile per (variant, target), the
# artifact folders they leave, and what a build records beside them (lock, depfile, ptxas report).
