import Foundation
import Quire

/// One document in a sync message: a version vector and changes.
///
/// In a request, `version` is what the client holds and `bundles` the
/// changes it pushes. In a response, `version` is what the server holds
/// after applying the push (the acknowledgement) and `bundles` the changes
/// the client lacks. Changes travel as `QCHG` change bundles, in causal
/// order; a message may carry several bundles per document.
public struct SyncDocument: Hashable, Sendable {
    public var id: DocumentID
    public var version: VersionVector
    public var bundles: [[UInt8]]

    public init(id: DocumentID, version: VersionVector, bundles: [[UInt8]] = []) {
        self.id = id
        self.version = version
        self.bundles = bundles
    }

    /// One document carrying `changes`, a causal order, as one bundle (none
    /// when empty) of format version `bundleVersion` (`ChangeEncoding.version`,
    /// or `olderReadersVersion` for a reader of older builds). The bundle
    /// keeps each replica's changes together as far as causality allows
    /// (`groupedByReplica`), as `encodeChanges` does, so that the receiver
    /// applies longer runs of typing at once.
    public init(id: DocumentID, version: VersionVector, changes: [Change], bundleVersion: UInt64 = ChangeEncoding.version) {
        self.init(id: id, version: version,
                  bundles: changes.isEmpty ? [] : [ChangeEncoding.encode(changes.groupedByReplica(), version: bundleVersion)])
    }

    /// The changes of every bundle, in order, at most `limits.maxChanges`
    /// in all.
    public func changes(limits: DecodingLimits) throws(DecodingError) -> [Change] {
        var changes: [Change] = []
        var limits = limits
        for bundle in bundles {
            let decoded = try ChangeEncoding.decode(bundle, limits: limits)
            changes += decoded
            limits.maxChanges -= decoded.count
        }
        return changes
    }

    /// The bytes of its bundles.
    public var byteCount: Int { bundles.reduce(0) { $0 + $1.count } }
}

/// What a client sends: where it stands, per document and in the server's
/// log, and the changes it believes the server lacks.
///
///     let request = SyncRequest(cursor: nil, documents: [
///         SyncDocument(id: "groceries", version: mine, changes: unsent),
///     ])
public struct SyncRequest: Hashable, Sendable {
    /// The client's position in the server's log; nil for a first sync
    /// (or a resync): the server then sends every change the stated
    /// version vectors lack.
    public var cursor: SyncCursor?
    /// Long-poll: when the server has nothing to send, it waits up to this
    /// long for a new change before answering. 0 answers at once.
    public var waitMilliseconds: UInt64
    /// The documents of `range` the client names, with their version
    /// vectors; those with changes to push carry them. One it does not
    /// name holds, for the server, the rows up to the cursor.
    public var documents: [SyncDocument]
    /// The documents the request is about: the answer holds only those.
    /// A client with more documents than a message holds states them a
    /// range at a time.
    public var range: DocumentRange
    /// The `QCHG` versions the client reads; none when the client does
    /// not say (one before review190, or over stdio before review202): the
    /// answer's bundles are then in `ChangeEncoding.olderReadersVersion`,
    /// which every build reads, and in `ChangeEncoding.version` only when
    /// it is here (`Specs/sync.md`, "Mixed versions of Quire"). Not in the
    /// message, after which a server before it refuses any byte: over HTTP
    /// it is the `Quire-Bundle-Versions` header (`HTTPSyncTransport`), which
    /// a server before it ignores; over stdio a message of its own at the
    /// start of the session (`SyncMessage.bundleVersions`), which a peer
    /// before it refuses as a kind it does not know, and goes on.
    public var readsBundleVersions: Set<UInt64>

    public init(cursor: SyncCursor?, waitMilliseconds: UInt64 = 0, documents: [SyncDocument], range: DocumentRange = .all,
                readsBundleVersions: Set<UInt64> = []) {
        self.cursor = cursor
        self.waitMilliseconds = waitMilliseconds
        self.documents = documents
        self.range = range
        self.readsBundleVersions = readsBundleVersions
    }

    /// The version the answer's bundles are written in (`readsBundleVersions`).
    public var answerBundleVersion: UInt64 { ChangeEncoding.writtenVersion(forReaderOf: readsBundleVersions) }

    /// The longest statement of versions taken, far above any real list:
    /// one of megabytes (a stdio frame may hold 64 MiB) would take 16 times
    /// its size in memory, split at its commas, before it is refused.
    public static let maxBundleVersionsStatementBytes = 256

    /// `versions` as a client states them: decimal numbers separated by
    /// commas, in order (`1,3,5` from this build).
    public static func statement(ofBundleVersions versions: some Sequence<UInt64>) -> String {
        versions.sorted().map(String.init).joined(separator: ",")
    }

    /// The versions a statement lists (`statement(ofBundleVersions:)`; a
    /// space around a number is taken); nil when it is not a list of
    /// versions, or is longer than `maxBundleVersionsStatementBytes`.
    public static func bundleVersions(stated value: String) -> Set<UInt64>? {
        guard value.utf8.count <= maxBundleVersionsStatementBytes else { return nil }
        var versions = Set<UInt64>()
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
            guard let version = UInt64(item.trimmingCharacters(in: .whitespaces)) else { return nil }
            versions.insert(version)
        }
        return versions
    }

    /// Why a statement of versions (`stated`, in `place`) is refused.
    static func refusal(ofBundleVersions stated: String, in place: String) -> String {
        "\(place) must list change bundle format versions, whole numbers separated by commas "
            + "(\(maxBundleVersionsStatementBytes) bytes at most), not \"\(stated.prefix(100))\""
    }
}

/// The documents whose ids (compared as bytes) come after `after` and up
/// to `through`; nil leaves that end open.
public struct DocumentRange: Hashable, Sendable {
    public var after: DocumentID?
    public var through: DocumentID?

    /// Every document.
    public static let all = DocumentRange(after: nil, through: nil)

    public init(after: DocumentID?, through: DocumentID?) {
        self.after = after
        self.through = through
    }

    public func contains(_ id: DocumentID) -> Bool {
        (after.map { $0 < id } ?? true) && (through.map { id <= $0 } ?? true)
    }
}

extension DocumentID {
    /// The greatest id below this one, nil below the least ("\0"): where a
    /// range ends to stop just short of it, as a range's `through` is
    /// inclusive. Ids compare as UTF-8 bytes, which order as their scalars
    /// do, and are at most `maxLength` bytes: this id with its last scalar
    /// made the one before, then as many of the greatest scalars as fit.
    var justBelow: DocumentID? {
        var scalars = rawValue.unicodeScalars
        let last = scalars.removeLast()
        // Only its prefixes lie below an id ending in the least scalar.
        guard last.value > 0 else { return DocumentID(rawValue: String(scalars)) }
        // The scalar before; none of the surrogates, which are no scalars, comes between.
        scalars.append(Unicode.Scalar(last.value == 0xE000 ? 0xD7FF : last.value - 1)!)
        var room = DocumentID.maxLength - String(scalars).utf8.count
        // The greatest scalar of each UTF-8 length, longest first.
        for (greatest, length) in [(0x10FFFF, 4), (0xFFFF, 3), (0x7FF, 2), (0x7F, 1)] as [(UInt32, Int)] {
            while room >= length {
                scalars.append(Unicode.Scalar(greatest)!)
                room -= length
            }
        }
        return DocumentID(rawValue: String(scalars))
    }
}

/// What the server answers: one page of what the client lacks.
public struct SyncResponse: Hashable, Sendable {
    /// The client's new position: it holds every change up to here once it
    /// has applied this page.
    public var cursor: SyncCursor
    /// True when the page was cut short by its size limit: ask again with
    /// the new cursor for the rest.
    public var more: Bool
    /// True when the request's cursor could not be served (another log, or
    /// a position the log never reached): the client must forget what it
    /// believed the server holds and go by the version vectors here.
    public var cursorReset: Bool
    /// Every document of the request the client may read, with the server's
    /// version vector, plus the documents with changes the client lacks.
    public var documents: [SyncDocument]

    public init(cursor: SyncCursor, more: Bool = false, cursorReset: Bool = false, documents: [SyncDocument]) {
        self.cursor = cursor
        self.more = more
        self.cursorReset = cursorReset
        self.documents = documents
    }
}

/// A refusal: an HTTP status and the reason in words. Over HTTP it is the
/// response's status line and body; over stdio it is a message of its own.
///
/// 400 malformed, 401 no or unknown token, 403 not allowed, 409 a change
/// clashes with a stored one, 413 too large, 415 a Content-Encoding the
/// server does not decode, 410 history compacted away (a served store's),
/// 422 a document damaged in the answering store,
/// 429 too many requests
/// (`retryAfterSeconds` says when to come back), 503 stopping.
public struct SyncFailure: Error, Hashable, Sendable, DescribedError {
    public var status: Int
    public var message: String
    public var retryAfterSeconds: Int?

    public init(status: Int, _ message: String, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// Whether trying again later can succeed (`HTTPError.isTransient`);
    /// otherwise the request must change first.
    public var isTransient: Bool { HTTPError.isTransient(status: status) }

    /// Whether the refusal is about the pushed changes themselves (400, 403,
    /// 409: `Specs/sync.md`, "Endpoint"). Any other (401 for a mistyped
    /// token, 404 for a wrong URL, 413), or a token that may not write at
    /// all (`deniesWriting`), says nothing about them.
    public var refusesPush: Bool { [400, 403, 409].contains(status) && !deniesWriting }

    /// The refusal of a push by a token that may only read: no verdict on
    /// its changes, which a token that may write can send. Clients know it
    /// by its status and text (stdio carries no headers), so neither may change;
    /// the text is the one servers have always sent, so older servers are understood.
    public static let readOnlyToken = SyncFailure(status: 403, "this token is read-only")

    /// Whether this is the refusal of any write by this token (`readOnlyToken`).
    public var deniesWriting: Bool { status == Self.readOnlyToken.status && message == Self.readOnlyToken.message }

    /// The refusal of a push to a document outside those a token is limited
    /// to (`Access.documents`): as with `readOnlyToken`, no verdict on the
    /// changes, which a token that may write the document can send. Clients
    /// know it by its status and text, the one servers have always sent.
    public static func outsideTokensDocuments(_ id: DocumentID) -> SyncFailure {
        SyncFailure(status: 403, "this token may not write document \(id)")
    }

    /// Whether the request was too large for the other side (413: its body,
    /// frame, payload, documents, changes, or the changes it would park): a
    /// smaller request may pass, with the same changes.
    public var isTooLarge: Bool { status == 413 }

    /// A served store's answer to a client lacking changes it compacted
    /// away (Specs/storage.md, "Compaction"): 410 Gone, as no retry brings
    /// them back. A client before it takes it as any refusal that is not
    /// about its push: the sync ends, recording nothing.
    public static func historyCompacted(document: String) -> SyncFailure {
        SyncFailure(status: 410, StoreError.historyCompacted(document).description)
    }

    /// Whether the other side no longer holds changes this store lacks
    /// (`historyCompacted`): no sync with it can bring them.
    public var isHistoryCompacted: Bool { status == 410 }

    /// The document a `historyCompacted` refusal names, read back from its
    /// text (the protocol carries no id beside it); nil for any other.
    public var compactedDocument: DocumentID? { document(namedAs: Self.historyCompacted(document:)) }

    /// The answering store's refusal to answer for a document it cannot
    /// read (a damaged change in its log or snapshots, or a damaged page of
    /// its file: Specs/storage.md, "Damaged stores"): nothing of it is sent
    /// or taken. 422, a 4xx: a client before it ends the sync at once with
    /// this text, recording nothing, where a 5xx is tried five times over
    /// HTTP; and none of 400, 403, 409, which reject a push.
    public static func documentDamaged(_ document: String) -> SyncFailure {
        SyncFailure(status: 422, "document \(document) is damaged in the answering store and cannot be read there: nothing of it was sent or taken")
    }

    /// The document a `documentDamaged` refusal names, read back from its
    /// text; nil for any other.
    public var damagedDocument: DocumentID? { document(namedAs: Self.documentDamaged) }

    /// The document this refusal names, when it is `refusal`'s for some
    /// document: the text around the id, from the text made for one.
    private func document(namedAs refusal: (String) -> SyncFailure) -> DocumentID? {
        let template = refusal("\u{0}")
        let pattern = Array(template.message.utf8), head = pattern.firstIndex(of: 0)!, tail = pattern.count - head - 1
        let text = Array(message.utf8)
        guard status == template.status, text.count > head + tail,
              let id = DocumentID(rawValue: String(decoding: text[head..<(text.count - tail)], as: UTF8.self)),
              refusal(id.rawValue).message == message else { return nil }
        return id
    }

    public var description: String { "\(status): \(message)" }
}
