/* What libmscclpp.so exports: the declarations marked MSCCLPP_API, that is the public C++ API of
 * these headers and the C APIs mscclpp_c.h and plan_api.h. Everything else is built with hidden
 * visibility, so the library's internals never clash with another library's in the same process
 * (upstream MSCCL++ loaded beside it, say), and its calls inside it never go through the PLT. */
#ifndef MSCCLPP_EXPORT_H_
#define MSCCLPP_EXPORT_H_

#if defined(__GNUC__)
#define MSCCLPP_API __attribute__((visibility("default")))
#else
#define MSCCLPP_API
#endif

#endif /* MSCCLPP_EXPORT_H_ */
