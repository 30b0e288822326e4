// glibc's malloc statistics (mallinfo2), which the Glibc module does not export.
#include <malloc.h>
