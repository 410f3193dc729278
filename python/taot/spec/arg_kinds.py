# What each kind of kernel argument means to the front end, in one place: its name in the spec and
# the manifest, whether it is passed at launch, which choices it varies on (align, hint, block), its
# manifest "args" and "specialization" entries, its type in Triton's signature, its token in variant
# ids, its [kernel.args] entry written back from compiled variants, and how a Triton signature or a
# tt.func parameter type reads as it. The manifest names are codegen/src/arg_kinds.cpp's (checked by
# tests/python/test_arg_kinds.py). Adding a kind is one class here and one row there.

from .writer import one_or_list, unique

POINTER_NONE = "None"  # the align choice of a pointer passed as None (Triton compiles it as a constexpr None)
_SPEC_HINTS = {16: 16, 1: 1, 0: "none"}  # a binding's hint (manifest form) -> the spec's


class ArgKind:
    """A kind of argument. The defaults are a scalar's without align or hint."""
    name = None             # as ArgSpec.kind and the spec say it
    manifest_name = None    # as the manifest's "kind" says it
    runtime = True          # passed at launch (the others are compile-time config fields)
    scalar = False          # a value rules, heuristics and `where` filters may read
    grid_operand = False    # a value grid expressions may read (codegen's grid_operand)
    addressed = False       # names memory (pointer, tensor descriptor): its type has an element dtype
    has_align = False       # varies on its alignment (16 or "any"), and may be None
    has_hint = False        # varies on its divisibility hint (1, 16 or "none")
    has_block = False       # has a block shape
    spec_keys = ()          # the keys of its spec entry besides "type" only it may have
    types = ()              # scalar types: (spec type, tt.func type, Triton signature names)

    def __repr__(self):
        return f"<arg kind {self.name}>"

    def triton_type(self, binding):
        """The type in Triton's signature: "*fp16", "tensordesc<fp16[64, 32]>", "i32"."""
        return "constexpr" if binding.none else binding.type

    def manifest_arg(self, arg, used_types, bindings):
        """The manifest's "args" entry; `used_types` are the arg's types surviving variants use, in
        spec order, and `bindings` its bindings in them."""
        entry = {"name": arg.name, "kind": self.manifest_name, "types": used_types}
        if arg.launch_only:
            entry["launch_only"] = True
        return entry

    def specialization(self, binding):
        """A variant's "specialization" entry for this argument."""
        return {"arg": binding.name, "type": binding.type}

    def id_token(self, binding, arg):
        """This argument's part of a variant id (None: no part)."""
        return "none" if binding.none else binding.type

    def spec_entry(self, bindings):
        """The [kernel.args] entry that compiles every binding in `bindings` (taot import-cache)."""
        return {"type": one_or_list(unique([binding.type for binding in bindings]))}


class _Pointer(ArgKind):
    name = manifest_name = "pointer"
    addressed = has_align = True
    spec_keys = ("align", "output", "rank", "none")

    def triton_type(self, binding):
        return "constexpr" if binding.none else "*" + binding.type

    def manifest_arg(self, arg, used_types, bindings):
        entry = {"name": arg.name, "kind": self.manifest_name, "dtypes": used_types, "output": arg.output}
        if arg.rank is not None:
            entry["rank"] = arg.rank
        if any(binding.none for binding in bindings):
            entry["none"] = True
        return entry

    def specialization(self, binding):
        entry = {"arg": binding.name, "dtype": binding.type, "align": binding.align}
        if binding.none:
            entry["none"] = True
        return entry

    def id_token(self, binding, arg):
        return "none" if binding.none else binding.type + ("a16" if binding.align == 16 else "")

    def spec_entry(self, bindings):
        live = [binding for binding in bindings if not binding.none]
        entry = {"type": one_or_list(["*" + dtype for dtype in unique([b.type for b in live]) or ["fp32"]]),
                 "align": one_or_list(sorted(unique([16 if b.align == 16 else "any" for b in live]), key=str)
                                      or ["any"])}
        if len(live) < len(bindings):
            entry["none"] = True
        return entry


class _Int(ArgKind):
    name = manifest_name = "int"
    scalar = grid_operand = has_hint = True
    spec_keys = ("hint",)
    types = (("i32", "i32", ("i32",)), ("i64", "i64", ("i64",)))

    def specialization(self, binding):
        return {"arg": binding.name, "type": binding.type, "hint": binding.hint}

    def id_token(self, binding, arg):
        if binding.none:
            return "none"
        if binding.launch_only and len(arg.choices) == 1:
            return None
        return binding.type + {16: "d16", 1: "eq1", 0: ""}[binding.hint]

    def spec_entry(self, bindings):
        types = unique([binding.type for binding in bindings if binding.type is not None]) or ["i32"]
        hints = sorted(unique([_SPEC_HINTS[binding.hint] for binding in bindings]), key=str)
        return {"type": one_or_list(types), "hint": one_or_list(hints)}


class _Float(ArgKind):
    name = manifest_name = "float"
    scalar = True
    types = (("fp32", "f32", ("fp32",)), ("fp64", "f64", ("fp64",)))


class _Bool(ArgKind):
    name = manifest_name = "bool"
    scalar = True
    types = (("i1", "i1", ("u1", "i1")),)

    def manifest_arg(self, arg, used_types, bindings):
        return {"name": arg.name, "kind": self.manifest_name}


class _Scalar(ArgKind):
    """A scalar whose form is chosen at launch, as Triton's JIT specializes on the Python value:
    None (compiled as a constexpr None, like a pointer's), an int (its type and hint as an int
    argument's), or a float. A spec says `none = true` on an int or float argument, or lists int and
    float types together (`type = ["i32", "fp32"]`)."""
    name = manifest_name = "scalar"
    scalar = has_hint = True
    spec_keys = ("hint", "none")
    types = ()  # its types are the int and float kinds' (a spec never names this kind)

    @staticmethod
    def is_float(type_name):
        return type_name in ("fp32", "fp64")

    def manifest_arg(self, arg, used_types, bindings):
        entry = {"name": arg.name, "kind": self.manifest_name,
                 "types": unique([binding.type for binding in bindings if not binding.none]) or [arg.choices[0]]}
        if any(binding.none for binding in bindings):
            entry["none"] = True
        return entry

    def specialization(self, binding):
        entry = {"arg": binding.name, "type": binding.type, "hint": binding.hint or 0}
        if binding.none:
            entry["none"] = True
        return entry

    def id_token(self, binding, arg):
        if binding.none:
            return "none"
        return binding.type + {16: "d16", 1: "eq1", 0: "", None: ""}[binding.hint]

    def spec_entry(self, bindings):
        live = [binding for binding in bindings if not binding.none]
        entry = {"type": one_or_list(unique([binding.type for binding in live]) or ["i32"])}
        hints = sorted(unique([_SPEC_HINTS[binding.hint] for binding in live if not self.is_float(binding.type)]),
                       key=str)
        if hints and hints != ["none"]:
            entry["hint"] = one_or_list(hints)
        if len(live) < len(bindings):
            entry["none"] = True
        return entry


class _Tensordesc(ArgKind):
    name = manifest_name = "tensordesc"
    addressed = has_block = True

    def triton_type(self, binding):
        return f"tensordesc<{binding.type}[{', '.join(map(str, binding.block))}]>"

    def manifest_arg(self, arg, used_types, bindings):
        blocks = []
        for binding in bindings:
            if list(binding.block) not in blocks:
                blocks.append(list(binding.block))
        return {"name": arg.name, "kind": self.manifest_name, "dtypes": used_types, "output": arg.output,
                "rank": len(arg.block), "blocks": blocks}

    def specialization(self, binding):
        return {"arg": binding.name, "dtype": binding.type, "block": list(binding.block)}


class _Constexpr(ArgKind):
    """A compile-time value (int, float, bool or string); a config field."""
    name = manifest_name = "constexpr"
    runtime = False

    def manifest_arg(self, arg, used_types, bindings):
        return {"name": arg.name, "kind": self.manifest_name}

    def triton_constexpr(self, value):
        """Its config value as a compile job's constexprs give it to Triton."""
        return value


class _Dtype(_Constexpr):
    """A compile-time dtype (`OUT_DTYPE: tl.constexpr` given as `dtype = [...]`); the manifest calls
    it a constexpr, its config field a dtype field."""
    name = "dtype"

    def triton_constexpr(self, value):
        return {"dtype": value}


POINTER, INT, FLOAT, BOOL, TENSORDESC, SCALAR, CONSTEXPR, DTYPE = (
    _Pointer(), _Int(), _Float(), _Bool(), _Tensordesc(), _Scalar(), _Constexpr(), _Dtype())
ARG_KINDS = {kind.name: kind for kind in (POINTER, INT, FLOAT, BOOL, TENSORDESC, SCALAR, CONSTEXPR, DTYPE)}
MANIFEST_KINDS = {kind.manifest_name: kind for kind in ARG_KINDS.values() if kind is not DTYPE}
# a spec entry's key only some kinds take -> the kind that takes it ("align" -> POINTER)
SPEC_KEY_OWNERS = {}
for _kind in ARG_KINDS.values():
    for _key in _kind.spec_keys:
        SPEC_KEY_OWNERS.setdefault(_key, _kind)
# spec scalar type -> its kind; tt.func type -> (kind, spec type); Triton signature name -> (kind, spec type)
SCALAR_TYPE_KINDS = {spec: kind for kind in ARG_KINDS.values() for spec, _, _ in kind.types}
IR_SCALAR_TYPES = {ir: (kind, spec) for kind in ARG_KINDS.values() for spec, ir, _ in kind.types}
SIGNATURE_SCALAR_TYPES = {name: (kind, spec) for kind in ARG_KINDS.values() for spec, _, names in kind.types
                          for name in names}


def arg_kind(name):
    """The kind ArgSpec.kind or Binding.kind `name` says."""
    return ARG_KINDS[name]


def manifest_kind(name):
    """The kind a manifest's "args" entry's "kind" says (KeyError for another name)."""
    return MANIFEST_KINDS[name]
