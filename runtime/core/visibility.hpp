// MSCCLPP_INTERNAL hides an implementation type nested in an exported class. A nested class takes
// the visibility of the class around it, so the Impl of an MSCCLPP_API class would be exported.
// The public header only declares it; the definition carries the mark.
#ifndef MSCCLPP_CORE_VISIBILITY_HPP_
#define MSCCLPP_CORE_VISIBILITY_HPP_

#if defined(__GNUC__)
#define MSCCLPP_INTERNAL __attribute__((visibility("hidden")))
#else
#define MSCCLPP_INTERNAL
#endif

#endif  // MSCCLPP_CORE_VISIBILITY_HPP_
