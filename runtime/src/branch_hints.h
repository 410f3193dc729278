// Branch hints for the launch path: which way a test usually goes, so that the compiler keeps the
// rare side out of the straight run of code a launch executes.
#pragma once

#define TAOT_LIKELY(condition) __builtin_expect(static_cast<bool>(condition), 1)
#define TAOT_UNLIKELY(condition) __builtin_expect(static_cast<bool>(condition), 0)
