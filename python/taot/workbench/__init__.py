# The kernel author's workbench on IR and caches: Triton's pass pipelines one pass at a time (passes),
# rebuilding from an edited stage (from-ir), reading and importing Triton caches (import-cache).
