import Quire

/// Answers sync requests, whatever carries them: `SyncServer` over its own
/// log (for `quire serve`), `PeerSyncService` over a replica's store (for
/// `quire serve --stdio`). HTTP and stdio only move the bytes.
public protocol SyncService: Sendable {
    /// Applies the request's pushes and returns the page of changes the
    /// client lacks, or throws the refusal.
    func respond(to request: SyncRequest, access: Access) async throws(SyncFailure) -> SyncResponse
}

extension SyncService {
    /// Decodes a request, answers it and encodes the answer (a failure
    /// message for a refusal): the whole exchange as bytes, for transports
    /// that carry no status of their own (stdio, tests). The request is
    /// answered for a client that reads `readsBundleVersions`, which a
    /// statement of them (`SyncMessage.bundleVersions`, stdio's
    /// `Quire-Bundle-Versions` header) sets for the requests after it; the
    /// statement is answered with the versions this build reads. A
    /// statement that lists no versions is refused (400) and changes nothing.
    public func respond(toMessage bytes: [UInt8], access: Access, limits: SyncMessage.Limits = .init(),
                        readsBundleVersions: inout Set<UInt64>) async -> [UInt8] {
        do {
            switch try SyncMessage.decode(bytes, limits: limits) {
            case .request(var request):
                request.readsBundleVersions = readsBundleVersions
                return SyncMessage.response(try await respond(to: request, access: access)).encoded()
            case .bundleVersions(let versions):
                readsBundleVersions = versions
                return SyncMessage.bundleVersions(Set(ChangeEncoding.readVersions)).encoded()
            case .response, .failure:
                return SyncMessage.failure(SyncFailure(status: 400, "expected a sync request")).encoded()
            }
        } catch let error as SyncMessage.DecodeError {
            return SyncMessage.failure(SyncFailure(decoding: error)).encoded()
        } catch let failure as SyncFailure {
            return SyncMessage.failure(failure).encoded()
        } catch {
            return SyncMessage.failure(SyncFailure(status: 500, "\(error)")).encoded()
        }
    }

    /// `respond(toMessage:access:limits:readsBundleVersions:)` for a client
    /// that has stated no versions: a request is answered in
    /// `ChangeEncoding.olderReadersVersion`.
    public func respond(toMessage bytes: [UInt8], access: Access, limits: SyncMessage.Limits = .init()) async -> [UInt8] {
        var statedNone = Set<UInt64>()
        return await respond(toMessage: bytes, access: access, limits: limits, readsBundleVersions: &statedNone)
    }
}

extension SyncFailure {
    /// 413 for a message over the limits, 400 for any other that does not decode.
    init(decoding error: SyncMessage.DecodeError) {
        switch error {
        case .tooLarge: self.init(status: 413, error.description)
        case .malformed: self.init(status: 400, error.description)
        }
    }

    /// A 400 for pushed changes of `document` that do not decode.
    init(undecodable error: DecodingError, in document: DocumentID) {
        self.init(status: 400, "the changes of document \(document) do not decode: \(error)")
    }

    /// Whether this is the refusal of `document`'s pushed bundles as of
    /// format `version`, which the other side does not read: no verdict on
    /// the changes. Known by its text, which every build has sent (over
    /// HTTP the body, over stdio the failure message).
    func refusesBundleVersion(_ version: UInt64, of document: DocumentID) -> Bool {
        let refusal = SyncFailure(undecodable: .unsupportedVersion(version), in: document)
        return status == refusal.status && message == refusal.message
    }

    /// A pushed change of `document` that the document refused: 400 when
    /// it breaks the rules of `Specs/crdt.md`, 409 when it reuses the id
    /// of another change, 413 when too many would wait for dependencies.
    init(refusing error: DocumentError, in document: DocumentID) {
        let status = switch error {
        case .invalidChange: 400
        case .conflictingChange: 409
        case .tooManyPendingChanges: 413
        default: 500
        }
        self.init(status: status, "a change of document \(document) does not apply: \(error)")
    }
}

extension SyncDocument {
    /// The changes of the bundles, or a 400 naming the document.
    func decodedChanges(limits: DecodingLimits) throws(SyncFailure) -> [Change] {
        do { return try changes(limits: limits) } catch {
            throw SyncFailure(undecodable: error, in: id)
        }
    }
}
