// Anchor for the common library; the helpers in bytes.h and seq.h are inline.
#include "common/bytes.h"
#include "common/seq.h"
