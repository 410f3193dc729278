/* The element types taot knows, listed once (an X-macro). Every dtype table of the runtime, the code
 * generator and the Python bindings is made from this list: the C ABI's taot_dtype, C++'s
 * taot::DType, names, sizes, the generator's enumerators, DLPack and __cuda_array_interface__
 * codes, torch's names. python/taot/spec/dtypes.py lists the same names for specs; a test
 * (tests/python/test_dtype_vocabulary.py) reads this file and checks that they agree.
 * Pure C; no includes. */
#ifndef TAOT_DTYPE_LIST_H_
#define TAOT_DTYPE_LIST_H_

/* X(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name), one row per dtype:
 *   ENUM         the suffix of the C enumerator TAOT_DTYPE_<ENUM>
 *   name         Triton's name, also the C++ enumerator taot::DType::<name> and the manifest's name
 *   value        the taot_dtype value: stable, part of the ABI; below TAOT_DTYPE_SLOTS
 *   bytes        the size of one element (1 for i1 and the fp8 types)
 *   dlpack_code  DLPack's DLDataTypeCode, as the name of its enumerator in taot/dlpack.h
 *   dlpack_bits  DLPack's bits (bool is 8 bits there)
 *   typestr      __cuda_array_interface__'s typestr without the byte-order character, "" if none
 *   torch_name   the attribute of the torch module that is this dtype ("float32")
 */
#define TAOT_DTYPES(X)                                                  \
  X(I1, i1, 1, 1, kBool, 8, "b1", "bool")                               \
  X(I8, i8, 2, 1, kInt, 8, "i1", "int8")                                \
  X(I16, i16, 3, 2, kInt, 16, "i2", "int16")                            \
  X(I32, i32, 4, 4, kInt, 32, "i4", "int32")                            \
  X(I64, i64, 5, 8, kInt, 64, "i8", "int64")                            \
  X(U8, u8, 6, 1, kUInt, 8, "u1", "uint8")                              \
  X(U16, u16, 7, 2, kUInt, 16, "u2", "uint16")                          \
  X(U32, u32, 8, 4, kUInt, 32, "u4", "uint32")                          \
  X(U64, u64, 9, 8, kUInt, 64, "u8", "uint64")                          \
  X(FP8E4NV, fp8e4nv, 10, 1, kFloat8_e4m3fn, 8, "", "float8_e4m3fn")    \
  X(FP8E5, fp8e5, 11, 1, kFloat8_e5m2, 8, "", "float8_e5m2")            \
  X(FP16, fp16, 12, 2, kFloat, 16, "f2", "float16")                     \
  X(BF16, bf16, 13, 2, kBfloat, 16, "", "bfloat16")                     \
  X(FP32, fp32, 14, 4, kFloat, 32, "f4", "float32")                     \
  X(FP64, fp64, 15, 8, kFloat, 64, "f8", "float64")

/* Every taot_dtype value (TAOT_DTYPE_UNKNOWN = 0 included) is below this: tables indexed by
 * dtype value have this many slots. */
#define TAOT_DTYPE_SLOTS 16

#endif /* TAOT_DTYPE_LIST_H_ */
