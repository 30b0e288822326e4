import Foundation
import QuireTestSupport
import Testing
import Quire
import QuireCore

/// README.md's examples, as written there (only the store's path and the
/// checks differ), so that a change that breaks them fails here first.
@Suite struct ReadmeExampleTests {
    @Test func usingTheCore() throws {
        var laptop = Document(replica: ReplicaID(0x1111))
        let body = try laptop.transact { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "Buy milk")
            return body
        }

        var phone = Document(replica: ReplicaID(0x2222))
        try phone.applyEncoded(laptop.encodeChanges())            // sync laptop -> phone
        try phone.transact { tx in try tx.insertText(body, at: 8, " and eggs") }
        try laptop.transact { tx in try tx.put(.root, key: "pinned", .bool(true)) }

        try laptop.applyEncoded(phone.encodeChanges(since: laptop.versionVector))
        try phone.applyEncoded(laptop.encodeChanges(since: phone.versionVector))
        #expect(try laptop.text(body) == phone.text(body))
        #expect(try laptop.text(body) == "Buy milk and eggs")
        #expect(try phone.get(.root, key: "pinned") == .scalar(.bool(true)))
    }

    @Test func usingTheStore() throws {
        try withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            let id = try store.createDocument()
            let body = try store.edit(id) { tx in
                let body = try tx.putObject(.root, key: "body", kind: .text)
                try tx.insertText(body, at: 0, "Buy milk")
                return body
            }
            #expect(try store.read(id) { doc in try doc.text(body) } == "Buy milk")
            let sameBody = try store.read(id) { doc -> ObjectID? in  // after a relaunch: found by its key
                guard case .object(.text, let body)? = try doc.get(.root, key: "body") else { return nil }
                return body
            }
            #expect(sameBody == body)

            let unsent = try store.outbox(peer: "server")
            #expect(unsent[id]?.count == 1)
            try store.acknowledge(peer: "server", id: id, version: store.read(id) { $0.versionVector })
            #expect(try store.outbox(peer: "server")[id] == nil)
        }
    }

    @Test func editingACopy() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let body = try store.edit(id) { tx in
            let body = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(body, at: 0, "Buy milk")
            return body
        }
        var before = try store.read(id) { doc in try doc.reading(body) }
        #expect(before.text == "Buy milk")
        try store.edit(id) { tx in try tx.insertText(body, at: 8, " and eggs") }  // as a sync would
        before = try store.edit(id) { tx in
            try tx.setText(body, to: "Buy oat milk", editedFrom: before)
            return try tx.document.reading(body)                  // the next save's reading
        }
        #expect(before.text == "Buy oat milk and eggs")
        #expect(try store.read(id) { doc in try doc.text(body) } == "Buy oat milk and eggs")
        try store.edit(id) { tx in try tx.setText(body, to: "Buy oat milk and eggs!", editedFrom: before) }
        #expect(try store.read(id) { doc in try doc.text(body) } == "Buy oat milk and eggs!")
    }

    struct Note: Codable, Equatable { var title: String; var tags: [String]; var due: Date? }

    @Test func theCodableBridgeAndEvents() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let events = store.events(of: id)
        let printed = Task { () -> DocumentEvent? in
            for await event in events { return event }
            return nil
        }
        try store.edit(id) { tx in try tx.write(Note(title: "Milk", tags: [], due: nil), into: .root) }
        let note = try store.read(id) { doc in try doc.read(Note.self, from: .root) }
        #expect(note == Note(title: "Milk", tags: [], due: nil))

        let event = try #require(await printed.value)
        #expect(event.origin == .local)
        #expect(event.changedKeys[.root, default: []].sorted() == ["tags", "title"])

        var (form, seen) = try store.read(id) { doc in (try doc.read(Note.self, from: .root), doc) }
        try store.edit(id) { tx in  // as a sync would
            var synced = try tx.document.read(Note.self, from: .root)
            synced.tags.append("food")
            try tx.write(synced, into: .root)
        }
        form.title = "Oat milk"
        seen = try store.edit(id) { tx in
            try tx.write(form, into: .root, editedFrom: seen)
            return tx.document                                    // the next save's reading
        }
        form = try seen.read(Note.self, from: .root)              // "Oat milk", with the tag
        #expect(form == Note(title: "Oat milk", tags: ["food"], due: nil))
        #expect(try store.read(id) { doc in try doc.read(Note.self, from: .root) } == form)
    }

    @MainActor @Test func asyncCallsFromTheMainActor() async throws {
        try await withTemporaryDirectory { directory in try await asyncCallsFromTheMainActor(in: directory) }
    }

    @MainActor func asyncCallsFromTheMainActor(in directory: String) async throws {
        let store = try await DocumentStore.open(path: directory + "/notes.quire")
        let id = try await store.async.createDocument { tx in
            try tx.write(Note(title: "Milk", tags: [], due: nil), into: .root)
        }
        var (form, seen) = try await store.async.read(id) { doc in (try doc.read(Note.self, from: .root), doc) }
        try store.edit(id) { tx in try tx.write(Note(title: "Milk", tags: ["food"], due: nil), into: .root) }  // as a sync would
        form.title = "Oat milk"
        seen = try await store.async.edit(id) { [form, seen] tx in   // committed when it returns
            try tx.write(form, into: .root, editedFrom: seen)
            return tx.document
        }
        let notes = try await store.async.documents()             // [DocumentInfo], in id order
        try await store.async.backup(to: directory + "/backup.quire")
        #expect(notes.map(\.id) == [id])
        #expect(try DocumentStore(path: directory + "/backup.quire", readOnly: true).documents() == notes)
        #expect(try seen.read(Note.self, from: .root) == Note(title: "Oat milk", tags: ["food"], due: nil))
        #expect(try await store.async.read(id) { doc in try doc.read(Note.self, from: .root) } == Note(title: "Oat milk", tags: ["food"], due: nil))
    }

    @Test func aRemovalEndsTheEventsLoop() async throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        let events = store.events(of: id)
        let loop = Task { () -> [DocumentEvent.Origin] in
            var seen: [DocumentEvent.Origin] = []
            for await event in events {                           // after each commit
                seen.append(event.origin)
                if event.isRemoved { break }                      // store.remove(id): close its view
            }
            return seen
        }
        try store.edit(id) { tx in try tx.write(Note(title: "Milk", tags: [], due: nil), into: .root) }
        try store.remove(id)
        #expect(await loop.value == [.local, .local])
    }

    @Test func outsideCommits() async throws {
        try await withTemporaryDirectory { directory in
            let store = try DocumentStore(path: directory + "/notes.quire")
            let id = try store.createDocument { tx in try tx.write(Note(title: "Milk", tags: [], due: nil), into: .root) }
            store.watchOutsideCommits(every: 0.25)                    // stops on close()
            let changes = store.events(of: id)
            let printed = Task { () -> String? in
                for await event in changes where event.origin == .outside {
                    return try store.read(id) { doc in try doc.read(Note.self, from: .root).title }  // as quire left it
                }
                return nil
            }
            try DocumentStore(path: directory + "/notes.quire").edit(id) { tx in  // as quire would
                try tx.write(Note(title: "Oat milk", tags: [], due: nil), into: .root)
            }
            #expect(try await printed.value == "Oat milk")
            #expect(try store.checkForOutsideCommits().isEmpty)      // the watch found it
            try store.close()
        }
    }
}
