/* The status codes of taot (C and C++), apart from the rest of the C ABI so that code which
 * needs no CUDA headers (the code generator) can use taot::Status too. */
#ifndef TAOT_STATUS_CODES_H_
#define TAOT_STATUS_CODES_H_

/* Status codes returned by every taot C function. TAOT_OK is zero. */
typedef enum taot_status {
  TAOT_OK = 0,
  TAOT_INVALID_ARGUMENT = 1,   /* a null pointer, a wrong dtype, a bad config value */
  TAOT_NO_MATCHING_VARIANT = 2,/* no compiled variant accepts these arguments */
  TAOT_NO_DRIVER = 3,          /* libcuda could not be loaded or lacks an entry point */
  TAOT_NO_CONTEXT = 4,         /* no CUDA context is current on the calling thread */
  TAOT_UNSUPPORTED_DEVICE = 5, /* no cubin was compiled for this GPU's architecture */
  TAOT_CUDA_ERROR = 6,         /* a driver call failed; the message names it */
  TAOT_OUT_OF_RESOURCES = 7,   /* more shared memory, threads or grid than the device allows */
  TAOT_NOT_SUPPORTED = 8,      /* the kernel needs a feature this runtime does not provide */
  TAOT_INTERNAL = 9            /* a bug in taot */
} taot_status;

#endif /* TAOT_STATUS_CODES_H_ */
