import Foundation
import Quire

/// Sync messages over a pair of byte streams (stdin and stdout of
/// `quire serve --stdio`): each message is preceded by its length as a
/// 4-byte little-endian number. Requests are answered one at a time, in
/// order; the end of the input ends the session.
public enum StdioFraming {
    /// The longest frame accepted, in bytes.
    public static let maxFrameBytes = 64 << 20

    public static func write(_ message: [UInt8], to handle: FileHandle) throws {
        var frame = ByteWriter()
        frame.writeUInt32(UInt32(message.count))
        frame.writeBytes(message)
        try handle.write(contentsOf: frame.bytes)
    }

    /// The next frame, or nil at the end of the input.
    public static func read(from handle: FileHandle) throws -> [UInt8]? {
        let header = try readUpTo(4, from: handle)
        if header.isEmpty { return nil }
        // An input that ends inside the length is as cut short as one that ends inside the message.
        guard header.count == 4 else { throw SyncFailure(status: 400, "the input ended inside a frame's length") }
        var reader = ByteReader(header)
        let length = Int(try reader.readUInt32("the frame length"))
        guard length <= maxFrameBytes else {
            throw SyncFailure(status: 413, "a frame of \(length) bytes, above the limit of \(maxFrameBytes)")
        }
        let message = try readUpTo(length, from: handle)
        guard message.count == length else { throw SyncFailure(status: 400, "the input ended inside a frame") }
        return message
    }

    /// `count` bytes, or fewer if the input ends first.
    private static func readUpTo(_ count: Int, from handle: FileHandle) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            guard let chunk = try handle.read(upToCount: count - bytes.count), !chunk.isEmpty else { break }
            bytes += chunk
        }
        return bytes
    }

    /// Serves `service` on `input` and `output` until the input ends.
    public static func serve(_ service: some SyncService, access: Access = .unrestricted,
                             input: FileHandle = .standardInput, output: FileHandle = .standardOutput) async throws {
        while let request = try read(from: input) {
            try write(await service.respond(toMessage: request, access: access), to: output)
        }
    }
}
