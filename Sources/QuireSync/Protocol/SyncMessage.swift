import Quire

/// The binary form of sync messages (`Specs/sync.md`, "Messages"): an
/// `Envelope` with magic `QSYN`, version 1, whose body is
/// `kind (byte) | flags (byte) | payload`, the payload zstd-compressed when
/// flag bit 0 is set. Kind 4, `bundleVersions`, is stdio's alone, since
/// review202: a peer before it refuses it (400, `unknown message kind`).
///
///     let bytes = SyncMessage.request(request).encoded()
///     guard case .request(let received) = try SyncMessage.decode(bytes, limits: .init()) else { ... }
public enum SyncMessage: Hashable, Sendable {
    case request(SyncRequest)
    case response(SyncResponse)
    case failure(SyncFailure)
    /// The `QCHG` versions the sender reads: over stdio, which carries no
    /// header, a client's statement for the requests after it
    /// (`SyncRequest.readsBundleVersions`), and a peer's answer to it.
    case bundleVersions(Set<UInt64>)

    static let magic = Array("QSYN".utf8)
    static let version: UInt64 = 1
    /// Payloads smaller than this are sent as they are: compressing them
    /// saves too little to pay for the work.
    static let compressionThreshold = 1024

    fileprivate enum Kind: UInt8 { case request = 1, response = 2, failure = 3, bundleVersions = 4 }
    private static let compressedFlag: UInt8 = 1
    private static let moreFlag: UInt8 = 1, cursorResetFlag: UInt8 = 2

    /// Caps on what `decode` accepts: a hostile message is refused before
    /// it costs more than this.
    public struct Limits: Sendable {
        /// The largest payload after decompression (a zstd bomb stops here).
        public var maxPayloadBytes: Int
        /// The most documents in one message.
        public var maxDocuments: Int

        public init(maxPayloadBytes: Int = 64 << 20, maxDocuments: Int = 100_000) {
            self.maxPayloadBytes = maxPayloadBytes
            self.maxDocuments = maxDocuments
        }
    }

    /// Why a message could not be decoded: `tooLarge` is a 413, the rest 400.
    public enum DecodeError: Error, Hashable, Sendable, DescribedError {
        case malformed(String)
        case tooLarge(String)

        public var description: String {
            switch self {
            case .malformed(let reason): "malformed sync message: \(reason)"
            case .tooLarge(let reason): "sync message too large: \(reason)"
            }
        }
    }

    // MARK: Encoding

    public func encoded() -> [UInt8] {
        var payload = ByteWriter()
        let kind: Kind
        switch self {
        case .request(let request):
            kind = .request
            Self.write(request.cursor ?? SyncCursor(logID: 0, seq: 0), to: &payload)
            payload.writeVarint(request.waitMilliseconds)
            Self.write(request.documents, to: &payload)
            // Only a request that needs it carries a range: every other is as it was before ranges.
            if request.range != .all {
                payload.writeString(request.range.after?.rawValue ?? "")
                payload.writeString(request.range.through?.rawValue ?? "")
            }
        case .response(let response):
            kind = .response
            Self.write(response.cursor, to: &payload)
            payload.writeByte((response.more ? Self.moreFlag : 0) | (response.cursorReset ? Self.cursorResetFlag : 0))
            Self.write(response.documents, to: &payload)
        case .failure(let failure):
            kind = .failure
            payload.writeVarint(failure.status)
            payload.writeString(failure.message)
            // Clamped as `decode` clamps: a delay a peer sent, of any size, encodes again.
            payload.writeVarint(failure.retryAfterSeconds.map { UInt64(clamping: $0) + 1 } ?? 0)
        case .bundleVersions(let versions):
            kind = .bundleVersions
            payload.writeString(SyncRequest.statement(ofBundleVersions: versions))
        }
        var body = [kind.rawValue, 0]
        if payload.bytes.count >= Self.compressionThreshold,
           let compressed = try? Zstd.compress(payload.bytes, level: 1), compressed.count < payload.bytes.count {
            body[1] = Self.compressedFlag
            body += compressed
        } else {
            body += payload.bytes
        }
        return Envelope.seal(magic: Self.magic, version: Self.version, body: body)
    }

    private static func write(_ cursor: SyncCursor, to writer: inout ByteWriter) {
        writer.writeUInt64(cursor.logID)
        writer.writeVarint(cursor.seq)
    }

    private static func write(_ documents: [SyncDocument], to writer: inout ByteWriter) {
        writer.writeVarint(documents.count)
        for document in documents {
            writer.writeString(document.id.rawValue)
            let replicas = document.version.replicas
            writer.writeVarint(replicas.count)
            for replica in replicas {
                writer.writeUInt64(replica.rawValue)
                writer.writeVarint(document.version[replica])
            }
            writer.writeVarint(document.bundles.count)
            for bundle in document.bundles { writer.writeData(bundle) }
        }
    }

    // MARK: Decoding

    /// Checks the frame, decompresses within `limits` and decodes. The
    /// change bundles inside are checked when their changes are decoded
    /// (`SyncDocument.changes(limits:)`).
    public static func decode(_ bytes: [UInt8], limits: Limits = Limits()) throws(DecodeError) -> SyncMessage {
        try decode(Frame(opening: bytes), limits: limits)
    }

    /// `decode(_:limits:)` of a message whose frame is open already.
    static func decode(_ frame: Frame, limits: Limits) throws(DecodeError) -> SyncMessage {
        do {
            let payload: [UInt8]
            do {
                payload = frame.isCompressed ? try Zstd.decompress(frame.payload, maxSize: limits.maxPayloadBytes) : Array(frame.payload)
            } catch CompressionError.contentTooLarge(let declared, let limit) {
                throw DecodeError.tooLarge("it expands to \(declared) bytes, above the limit of \(limit)")
            } catch {
                throw DecodeError.malformed("\(error)")
            }
            guard payload.count <= limits.maxPayloadBytes else {
                throw DecodeError.tooLarge("\(payload.count) bytes, above the limit of \(limits.maxPayloadBytes)")
            }
            var reader = ByteReader(payload)
            let message: SyncMessage
            switch frame.kind {
            case .request:
                let cursor = try readCursor(&reader)
                let wait = try reader.readVarint("the wait")
                let documents = try readDocuments(&reader, limits: limits)
                let range = reader.isAtEnd ? .all : DocumentRange(after: try readRangeEnd(&reader), through: try readRangeEnd(&reader))
                message = .request(SyncRequest(cursor: cursor, waitMilliseconds: wait, documents: documents, range: range))
            case .response:
                let cursor = try readCursor(&reader) ?? SyncCursor(logID: 0, seq: 0)
                let flags = try reader.readByte("the response flags")
                guard flags & ~(moreFlag | cursorResetFlag) == 0 else { throw DecodingError.invalid("unknown response flags \(flags)") }
                let documents = try readDocuments(&reader, limits: limits)
                message = .response(SyncResponse(cursor: cursor, more: flags & moreFlag != 0, cursorReset: flags & cursorResetFlag != 0,
                                                  documents: documents))
            case .failure:
                let status = try reader.readIndex("the status", below: 1000)
                let text = try reader.readString("the failure message")
                let retryAfter = try reader.readVarint("the retry delay")
                message = .failure(SyncFailure(status: status, text,
                                               retryAfterSeconds: retryAfter == 0 ? nil : Int(clamping: retryAfter - 1)))
            case .bundleVersions:
                let stated = try reader.readString("the bundle versions")
                guard let versions = SyncRequest.bundleVersions(stated: stated) else {
                    throw DecodingError.invalid(SyncRequest.refusal(ofBundleVersions: stated, in: "the bundle versions"))
                }
                message = .bundleVersions(versions)
            }
            guard reader.isAtEnd else { throw DecodingError.invalid("\(reader.remaining) bytes follow the message") }
            return message
        } catch let error as DecodeError {
            throw error
        } catch let error as DecodingError {
            throw .malformed(error.description)
        } catch {
            throw .malformed("\(error)")
        }
    }

    /// A message whose envelope is checked (magic, version, CRC-32), its
    /// kind and flags read, and its payload not yet decompressed: what a
    /// server looks at before it decides to take on the message.
    struct Frame {
        fileprivate let kind: Kind
        let isCompressed: Bool
        /// The payload as sent.
        let payload: ArraySlice<UInt8>

        init(opening bytes: [UInt8]) throws(DecodeError) {
            do {
                var frame = try Envelope.open(bytes, magic: magic, name: "a sync message", version: version)
                guard let kind = Kind(rawValue: try frame.readByte("the message kind")) else {
                    throw DecodingError.invalid("unknown message kind")
                }
                let flags = try frame.readByte("the message flags")
                guard flags & ~compressedFlag == 0 else { throw DecodingError.invalid("unknown message flags \(flags)") }
                (self.kind, isCompressed, payload) = (kind, flags & compressedFlag != 0, frame.remainingBytes)
            } catch let error as DecodingError {
                throw .malformed(error.description)
            } catch {
                throw .malformed("\(error)")
            }
        }

        /// The size of the payload once decompressed, as its zstd frame
        /// declares it (or as sent, uncompressed), found without
        /// decompressing: about what decoding the message holds in memory.
        /// nil for a compressed payload whose header declares none
        /// (`decode` says what is wrong).
        var payloadSize: Int? {
            isCompressed ? Zstd.declaredContentSize(payload).map { Int(clamping: $0) } : payload.count
        }
    }

    /// nil for the all-zero cursor, which means "none".
    private static func readCursor(_ reader: inout ByteReader) throws(DecodingError) -> SyncCursor? {
        let cursor = SyncCursor(logID: try reader.readUInt64("the log id"), seq: try reader.readVarint("the cursor"))
        return cursor.logID == 0 && cursor.seq == 0 ? nil : cursor
    }

    /// A document id, or nil for the empty string: that end of the range is open.
    private static func readRangeEnd(_ reader: inout ByteReader) throws(DecodingError) -> DocumentID? {
        let text = try reader.readString("a range end")
        guard !text.isEmpty else { return nil }
        guard let id = DocumentID(rawValue: text) else { throw DecodingError.invalid("range end \"\(text.prefix(300))\" is too long") }
        return id
    }

    private static func readDocuments(_ reader: inout ByteReader, limits: Limits) throws -> [SyncDocument] {
        let count = try reader.readCount("documents", minimumItemSize: 3)
        guard count <= limits.maxDocuments else {
            throw DecodeError.tooLarge("\(count) documents, above the limit of \(limits.maxDocuments)")
        }
        var documents: [SyncDocument] = []
        documents.reserveCapacity(count)
        var seen = Set<DocumentID>()
        for _ in 0..<count {
            let text = try reader.readString("a document id")
            guard let id = DocumentID(rawValue: text), seen.insert(id).inserted else {
                throw DecodingError.invalid("document id \"\(text.prefix(300))\" is empty, too long or repeated")
            }
            var version = VersionVector()
            for _ in 0..<(try reader.readCount("version vector entries", minimumItemSize: 9)) {
                let replica = ReplicaID(try reader.readUInt64("a replica id"))
                guard version[replica] == 0 else { throw DecodingError.invalid("replica \(replica) is repeated") }
                // A zero would leave no entry, and the replica could come again.
                let counter = try reader.readVarint("a counter")
                guard counter > 0 else { throw DecodingError.invalid("replica \(replica) has counter 0; a version vector names only replicas it holds operations of") }
                version[replica] = counter
            }
            var bundles: [[UInt8]] = []
            for _ in 0..<(try reader.readCount("change bundles")) {
                bundles.append(Array(try reader.readData("a change bundle")))
            }
            documents.append(SyncDocument(id: id, version: version, bundles: bundles))
        }
        return documents
    }
}
