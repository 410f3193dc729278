# The spec: reading a spec file, validating it into the model, its expression languages, the kernels
# as written (decorators, source), and the enumeration of variants per target.
