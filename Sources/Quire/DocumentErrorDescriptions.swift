// The core's errors, which the store's calls throw as they are: QuireCore
// uses only the standard library, so they are described for
// `localizedDescription` here.
extension DocumentError: DescribedError {}
extension QuireCore.DecodingError: DescribedError {}
