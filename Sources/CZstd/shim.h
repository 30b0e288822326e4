#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
