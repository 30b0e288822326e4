import Foundation

/// Writes a `/bin/sh` script made of `body` to `path`, executable.
///
/// The file is written through a descriptor closed on exec. Written the
/// usual way, a process that a test running beside starts while the file
/// is open keeps it open for writing (a script that ends in `exec sleep
/// 600`, for minutes), and starting this script fails with "Text file
/// busy" (ETXTBSY).
public func writeShellScript(_ body: String, to path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    let script = Array("#!/bin/sh\n\(body)\n".utf8)
    var offset = 0
    while offset < script.count {
        let written = script.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        offset += written
    }
}
