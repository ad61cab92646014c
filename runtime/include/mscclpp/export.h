/* What libmscclpp.so exports. The library is built with hidden visibility: only declarations
 * marked MSCCLPP_API (the public C++ API of these headers and the C APIs mscclpp_c.h, plan_api.h)
 * are in its dynamic symbol table, so its internals never clash with another library's in the same
 * process (upstream MSCCL++ loaded beside us, say) and calls inside it never go through the PLT.
 * MSCCLPP_INTERNAL marks a member of an exported class that stays inside the library. */
#ifndef MSCCLPP_EXPORT_H_
#define MSCCLPP_EXPORT_H_

#if defined(__GNUC__)
#define MSCCLPP_API __attribute__((visibility("default")))
#define MSCCLPP_INTERNAL __attribute__((visibility("hidden")))
#else
#define MSCCLPP_API
#define MSCCLPP_INTERNAL
#endif

#endif /* MSCCLPP_EXPORT_H_ */
