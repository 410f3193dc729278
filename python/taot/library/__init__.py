# A library folder: the manifest written from a compile, the overrides kept in it, and a built library
# as the measuring commands load it.
