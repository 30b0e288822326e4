// glibc's malloc statistics (mallinfo2), which the Glibc module does not
// export: quire-bench measures a document's heap memory with them.
#include <malloc.h>
