import Foundation
import Testing
import QuireTestSupport
@testable import Quire

@Suite struct CodableBridgeTests {
    struct Oops: Error {}

    struct Address: Codable, Equatable {
        var street: String
        var zip: Int
    }

    struct Contact: Codable, Equatable {
        var name: String
        var bio: String
        var home: Address
        var tags: [String]
        var scores: [Int]
        var friends: [Address]
        var nickname: String?
        var born: Date
        var avatar: Data
        var rating: Double
        var favourite: Bool
    }

    static let ada = Contact(
        name: "Ada", bio: "Wrote the first program.", home: Address(street: "St James's Square", zip: 12),
        tags: ["maths", "poetry"], scores: [3, 1, 4], friends: [Address(street: "Marylebone", zip: 1)],
        nickname: "Enchantress", born: Date(timeIntervalSince1970: -4_887_936_000.25), avatar: Data([0, 1, 255]),
        rating: 4.5, favourite: true)

    func store(with contact: Contact) throws -> (DocumentStore, DocumentID) {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try store.edit(id) { tx in try tx.write(contact, into: .root) }
        return (store, id)
    }

    /// The operations of the last change of a document.
    func lastOperations(_ store: DocumentStore, _ id: DocumentID) throws -> [QuireCore.Operation] {
        try store.read(id) { try #require($0.lastChange).operations }
    }

    /// Replicas holding `base` each write one of `values` at once, then sync,
    /// each taking the others' changes in another order. The value they all
    /// read then (which must decode, and be the same on each).
    func merged<T: Codable & Equatable>(_ base: T, _ values: T...) throws -> T {
        var replicas = values.indices.map { Document(replica: ReplicaID(UInt64($0 + 1))) }
        try replicas[0].transact { tx in try tx.write(base, into: .root) }
        for i in replicas.indices.dropFirst() { try replicas[i].applyEncoded(replicas[0].encodeChanges()) }
        for (i, value) in values.enumerated() { try replicas[i].transact { tx in try tx.write(value, into: .root) } }
        let written = replicas
        for i in replicas.indices {
            for next in 1..<written.count {
                try replicas[i].applyEncoded(written[(i + next) % written.count].encodeChanges(since: replicas[i].versionVector))
            }
        }
        let reads = try replicas.map { try $0.read(T.self, from: .root) }
        #expect(reads.allSatisfy { $0 == reads[0] }, "the replicas read \(reads)")
        return reads[0]
    }

    @Test func roundTripsEveryKindOfField() throws {
        let (store, id) = try store(with: Self.ada)
        #expect(try store.read(id) { try $0.read(Contact.self, from: .root) } == Self.ada)
        // Strings are texts, nested structs maps, arrays lists.
        try store.read(id) { doc in
            guard case .object(.text, let bio)? = try doc.get(.root, key: "bio") else { Issue.record("bio is not a text"); return }
            #expect(try doc.text(bio) == Self.ada.bio)
            guard case .object(.map, _)? = try doc.get(.root, key: "home"), case .object(.list, _)? = try doc.get(.root, key: "scores") else {
                Issue.record("home or scores has the wrong kind"); return
            }
        }

        var anonymous = Self.ada
        anonymous.nickname = nil
        try store.edit(id) { tx in try tx.write(anonymous, into: .root) }
        #expect(try lastOperations(store, id).count == 1)  // removing the key, nothing else
        #expect(try !store.read(id) { try $0.keys(.root) }.contains("nickname"))
        #expect(try store.read(id) { try $0.read(Contact.self, from: .root) } == anonymous)
    }

    @Test func unchangedFieldsMakeNoOperations() throws {
        let (store, id) = try store(with: Self.ada)
        let version = try store.versionVector(id)
        try store.edit(id) { tx in try tx.write(Self.ada, into: .root) }
        #expect(try store.versionVector(id) == version)
    }

    @Test func editingOneCharacterIsATextEditNotAReplacement() throws {
        let (store, id) = try store(with: Self.ada)
        var edited = Self.ada
        edited.bio = "Wrote the first programs."
        try store.edit(id) { tx in try tx.write(edited, into: .root) }
        let operations = try lastOperations(store, id)
        #expect(operations.count == 1)
        guard case .insert(_, _, .text("s")) = operations[0] else { Issue.record("\(operations)"); return }

        edited.bio = "Wrote the first programme."  // "s" -> "me": a delete and an insert
        try store.edit(id) { tx in try tx.write(edited, into: .root) }
        #expect(try (1...2).contains(lastOperations(store, id).count))
        #expect(try store.read(id) { try $0.read(Contact.self, from: .root) } == edited)
    }

    @Test func listsChangeByTheElementsThatDiffer() throws {
        let (store, id) = try store(with: Self.ada)
        var edited = Self.ada
        edited.scores.insert(9, at: 1)
        try store.edit(id) { tx in try tx.write(edited, into: .root) }
        let operations = try lastOperations(store, id)
        #expect(operations.count == 1)
        guard case .insert(_, _, let content) = operations[0] else { Issue.record("\(operations)"); return }
        #expect(content == .values([.scalar(.int(9))]))

        // A struct inside a list is updated in place: one text edit.
        edited.friends[0].street = "Marylebone Road"
        try store.edit(id) { tx in try tx.write(edited, into: .root) }
        #expect(try lastOperations(store, id).count == 1)

        edited.tags = ["poetry", "engines"]
        try store.edit(id) { tx in try tx.write(edited, into: .root) }
        #expect(try store.read(id) { try $0.read(Contact.self, from: .root) } == edited)
    }

    /// A list written with more elements differing than one search of
    /// `TextDiff` takes (2,000) is diffed all the same. Written as deleted
    /// and inserted whole, it brought back what another replica deleted
    /// meanwhile, and where both wrote such a list, each element they both
    /// kept came twice.
    @Test func listsDifferingPastOneSearchMergeWithoutDuplicates() throws {
        let base = Array(1...7_500)
        let onLaptop = base.filter { $0 % 2 != 0 }  // 3,750 deleted
        let onPhone = base.filter { $0 % 3 != 0 }   // 2,500 deleted
        #expect(try merged(["values": base], ["values": onLaptop], ["values": onPhone])
                == ["values": base.filter { $0 % 2 != 0 && $0 % 3 != 0 }])
    }

    @Test func replicasEditingDifferentFieldsAndPartsOfATextMerge() throws {
        let (laptop, id) = try store(with: Self.ada)
        let phone = try DocumentStore.inMemory()
        try phone.create(id: id)
        try phone.apply(id, laptop.changes(id))

        var onLaptop = Self.ada
        onLaptop.name = "Ada Lovelace"
        onLaptop.bio = "She wrote the first program."
        try laptop.edit(id) { tx in try tx.write(onLaptop, into: .root) }
        var onPhone = Self.ada
        onPhone.rating = 5
        onPhone.bio = "Wrote the first program, for the Analytical Engine."
        try phone.edit(id) { tx in try tx.write(onPhone, into: .root) }

        try laptop.apply(id, phone.changes(id, since: laptop.versionVector(id)))
        try phone.apply(id, laptop.changes(id, since: phone.versionVector(id)))
        var merged = Self.ada
        merged.name = "Ada Lovelace"
        merged.rating = 5
        merged.bio = "She wrote the first program, for the Analytical Engine."
        #expect(try laptop.read(id) { try $0.read(Contact.self, from: .root) } == merged)
        #expect(try phone.read(id) { try $0.read(Contact.self, from: .root) } == merged)
    }

    enum Status: String, Codable, Equatable { case active, done, archived }
    struct Chore: Codable, Equatable {
        var status: Status
        var owner: UUID
    }

    /// An enum case or a UUID is one value or another: changed on two
    /// replicas at once, it ends as one of the two on both, where as texts
    /// the two edits merged into a string no case or UUID reads from.
    @Test func concurrentChangesOfAnEnumOrAUUIDLeaveOneOfTheValues() throws {
        var laptop = Document(replica: ReplicaID(1)), phone = Document(replica: ReplicaID(2))
        try laptop.transact { tx in try tx.write(Chore(status: .active, owner: UUID()), into: .root) }
        try phone.applyEncoded(laptop.encodeChanges())
        let (done, archived) = (Chore(status: .done, owner: UUID()), Chore(status: .archived, owner: UUID()))
        try laptop.transact { tx in try tx.write(done, into: .root) }
        try phone.transact { tx in try tx.write(archived, into: .root) }
        try laptop.applyEncoded(phone.encodeChanges(since: laptop.versionVector))
        try phone.applyEncoded(laptop.encodeChanges(since: phone.versionVector))

        let merged = try laptop.read(Chore.self, from: .root)
        #expect(try phone.read(Chore.self, from: .root) == merged)
        #expect([done.status, archived.status].contains(merged.status))
        #expect([done.owner, archived.owner].contains(merged.owner))
        // Written again unchanged, it makes no change.
        try laptop.transact { tx in try tx.write(merged, into: .root) }
        #expect(laptop.versionVector == phone.versionVector)
    }

    struct Folder: Codable, Equatable {
        var name: String
        var notes: [DocumentID]
        var pinned: DocumentID?
    }

    /// An app's model holds the ids of its notes: `DocumentID` was not
    /// Codable, so such a model could not be written (nor saved with
    /// `JSONEncoder`) without a retroactive conformance, which would have
    /// made each id a text, merging concurrent changes into no id at all.
    @Test func documentIDsAreCodableAndConcurrentChangesLeaveOneOfThem() throws {
        let folder = Folder(name: "Shopping", notes: ["groceries", DocumentID.generate()], pinned: "groceries")
        #expect(try JSONDecoder().decode(Folder.self, from: JSONEncoder().encode(folder)) == folder)
        #expect(throws: Swift.DecodingError.self) { try JSONDecoder().decode(DocumentID.self, from: Data(#""""#.utf8)) }

        var laptop = Document(replica: ReplicaID(1)), phone = Document(replica: ReplicaID(2))
        try laptop.transact { tx in try tx.write(folder, into: .root) }
        #expect(try laptop.read(Folder.self, from: .root) == folder)
        #expect(try laptop.get(.root, key: "pinned") == .scalar(.string("groceries")))
        try phone.applyEncoded(laptop.encodeChanges())
        var (onLaptop, onPhone) = (folder, folder)
        onLaptop.pinned = "bread"
        onPhone.pinned = "butter"
        try laptop.transact { tx in try tx.write(onLaptop, into: .root) }
        try phone.transact { tx in try tx.write(onPhone, into: .root) }
        try laptop.applyEncoded(phone.encodeChanges(since: laptop.versionVector))
        try phone.applyEncoded(laptop.encodeChanges(since: phone.versionVector))
        let merged = try laptop.read(Folder.self, from: .root)
        #expect(try phone.read(Folder.self, from: .root) == merged)
        #expect(["bread", "butter"].contains(merged.pinned))
    }

    /// A case stored as a text, as before, still reads; writing it makes
    /// it a string scalar.
    @Test func anEnumCaseStoredAsATextStillReads() throws {
        var doc = Document(replica: ReplicaID(1))
        let owner = UUID()
        try doc.transact { tx in
            try tx.insertText(tx.putObject(.root, key: "status", kind: .text), at: 0, "done")
            try tx.insertText(tx.putObject(.root, key: "owner", kind: .text), at: 0, owner.uuidString)
        }
        #expect(try doc.read(Chore.self, from: .root) == Chore(status: .done, owner: owner))
        try doc.transact { tx in try tx.write(Chore(status: .archived, owner: owner), into: .root) }
        #expect(try doc.get(.root, key: "status") == .scalar(.string("archived")))
        #expect(try doc.get(.root, key: "owner") == .scalar(.string(owner.uuidString)))
    }

    enum Shape: Codable, Equatable { case circle(radius: Double), square(side: Double), dot }
    struct Drawing: Codable, Equatable {
        var shape: Shape
        var layers: [Shape]
    }

    /// An enum case with associated values is a map of one key, the case's
    /// name. Changed on replicas at once, key by key, it became a map of
    /// several cases, which no case reads from; replaced whole, it ends as
    /// one of the values.
    @Test func concurrentChangesOfAnEnumCaseWithValuesLeaveOneOfTheValues() throws {
        let base = Drawing(shape: .circle(radius: 1), layers: [])
        let values = [Shape.square(side: 2), .dot, .circle(radius: 3)].map { Drawing(shape: $0, layers: []) }
        #expect(try values.contains(merged(base, values[0], values[1], values[2])))
    }

    @Test func anEnumCaseWithValuesWrittenUnchangedIsNoChange() throws {
        var doc = Document(replica: ReplicaID(1))
        let drawing = Drawing(shape: .square(side: 2), layers: [.dot, .circle(radius: 1), .square(side: 1)])
        try doc.transact { tx in try tx.write(drawing, into: .root) }
        let written = doc.versionVector
        let read = try doc.read(Drawing.self, from: .root)
        try doc.transact { tx in try tx.write(read, into: .root) }
        #expect(doc.versionVector == written)
        // Only as a field or an element: the map written into cannot be replaced.
        #expect(throws: EncodingError.self) { try doc.transact { tx in try tx.write(Shape.dot, into: .root) } }
    }

    struct Payment: Codable, Equatable {
        var link: URL
        var amount: Decimal
    }

    /// A URL and a Decimal encode as maps (the URL's text; a Decimal's
    /// exponent, mantissa and sign). Changed on two replicas at once, key by
    /// key, they merged into a URL and a number neither replica wrote.
    @Test func concurrentChangesOfAURLOrADecimalLeaveOneOfTheValues() throws {
        let base = Payment(link: URL(string: "https://example.com/a")!, amount: Decimal(string: "12.5")!)
        let values = [Payment(link: URL(string: "https://quire.org/docs")!, amount: Decimal(string: "-3.14159")!),
                      Payment(link: URL(string: "http://x.io")!, amount: Decimal(string: "100000000000000000000000.5")!)]
        let merged = try merged(base, values[0], values[1])
        #expect(values.map(\.link).contains(merged.link))
        #expect(values.map(\.amount).contains(merged.amount))
    }

    struct Cell: Codable, Hashable {
        var row: Int
        var column: Int
    }
    struct Sheet: Codable, Equatable { var values: [Cell: Int] }

    /// Swift encodes a dictionary with struct keys as a list of alternating
    /// keys and values. Stored so, a removal and a concurrent edit of the
    /// same entry left a key without its value, and the list did not
    /// decode; as a map from the keys' texts, entries merge as keys do.
    @Test func concurrentRemovalsAndEditsOfADictionaryWithStructKeysMergeAsAMap() throws {
        let (a, b, c, d) = (Cell(row: 0, column: 0), Cell(row: 1, column: 0), Cell(row: 2, column: 0), Cell(row: 3, column: 0))
        let base = Sheet(values: [a: 1, b: 1, c: 1])
        let removedB = Sheet(values: [a: 1, c: 1]), editedB = Sheet(values: [a: 1, b: 5, c: 1])
        let editedCAddedD = Sheet(values: [a: 1, b: 1, c: 7, d: 2])
        let merged = try merged(base, removedB, editedB, editedCAddedD)
        // The removal and the edit of `b` decide its key by stamp; the rest all stays.
        #expect([Sheet(values: [a: 1, c: 7, d: 2]), Sheet(values: [a: 1, b: 5, c: 7, d: 2])].contains(merged))
    }

    /// Stored as a list of keys and values, as before, such a dictionary
    /// still reads; written, it becomes a map keyed by the keys' texts.
    @Test func aDictionaryWithStructKeysStoredAsAListStillReads() throws {
        var doc = Document(replica: ReplicaID(1))
        try doc.transact { tx in
            let list = try tx.putObject(.root, key: "values", kind: .list)
            let key = try tx.insertObject(list, at: 0, kind: .map)
            try tx.put(key, key: "row", .int(2))
            try tx.put(key, key: "column", .int(0))
            try tx.insert(list, at: 1, .int(7))
        }
        let sheet = Sheet(values: [Cell(row: 2, column: 0): 7])
        #expect(try doc.read(Sheet.self, from: .root) == sheet)
        try doc.transact { tx in try tx.write(sheet, into: .root) }
        guard case .object(.map, let values)? = try doc.get(.root, key: "values") else { Issue.record("not a map"); return }
        #expect(try doc.keys(values) == [#"{"column":0,"row":2}"#])
        #expect(try doc.read(Sheet.self, from: .root) == sheet)
        let written = doc.versionVector
        try doc.transact { tx in try tx.write(sheet, into: .root) }
        #expect(doc.versionVector == written)
    }

    struct Profile: Codable, Equatable {
        var name: String
        var tags: Set<String>
    }

    /// A set lists its elements in an order of its own, which an equal set
    /// need not share: read and written back, it makes no change, so a
    /// replica that changed another field brings back no element another
    /// replica removed meanwhile, and elements added on both are all kept.
    @Test func aSetWrittenBackIsNoChangeAndBringsNoRemovedElementBack() throws {
        var laptop = Document(replica: ReplicaID(1)), phone = Document(replica: ReplicaID(2))
        try laptop.transact { tx in try tx.write(Profile(name: "Ada", tags: Set((0..<40).map { "tag\($0)" })), into: .root) }
        try phone.applyEncoded(laptop.encodeChanges())
        let written = laptop.versionVector
        var onLaptop = try laptop.read(Profile.self, from: .root)
        try laptop.transact { tx in try tx.write(onLaptop, into: .root) }
        #expect(laptop.versionVector == written)

        onLaptop.tags.remove("tag3")
        onLaptop.tags.insert("maths")
        try laptop.transact { tx in try tx.write(onLaptop, into: .root) }
        var onPhone = try phone.read(Profile.self, from: .root)
        onPhone.name = "Ada Lovelace"
        onPhone.tags.insert("poetry")
        try phone.transact { tx in try tx.write(onPhone, into: .root) }
        try laptop.applyEncoded(phone.encodeChanges(since: laptop.versionVector))
        try phone.applyEncoded(laptop.encodeChanges(since: phone.versionVector))

        let merged = Profile(name: "Ada Lovelace", tags: onLaptop.tags.union(["poetry"]))
        #expect(try laptop.read(Profile.self, from: .root) == merged)
        #expect(try phone.read(Profile.self, from: .root) == merged)
    }

    struct Chores: Codable, Equatable {
        struct Task: Codable, Equatable {
            var title: String
            var labels: Set<String>
        }
        var tasks: [Task]
    }

    /// A set read back lists its elements in an order of its own, not its
    /// list's. Compared with the list's order, every struct holding one
    /// differed from the one stored, so an insert at the front of an array
    /// of them rewrote each struct in place into the one before it, and a
    /// concurrent edit of a struct ended in another, mixed with its title.
    @Test func aStructHoldingASetKeepsItsPlaceInAnArray() throws {
        let base = Chores(tasks: [.init(title: "one", labels: Set((0..<20).map { "a\($0)" })),
                                  .init(title: "two", labels: Set((0..<20).map { "b\($0)" }))])
        var doc = Document(replica: ReplicaID(1))
        try doc.transact { tx in try tx.write(base, into: .root) }
        let read = try doc.read(Chores.self, from: .root)
        var onLaptop = read, onPhone = read
        onLaptop.tasks.insert(.init(title: "zero", labels: ["q"]), at: 0)
        onPhone.tasks[1].title = "TWO"
        var expected = onLaptop
        expected.tasks[2].title = "TWO"
        #expect(try merged(base, onLaptop, onPhone) == expected)
    }

    struct Row: Codable, Equatable {
        var title: String
        var done: Bool
        var note: String
    }

    /// Deleting an element of an array and editing the next, in one write,
    /// is a run of two elements replaced by one. The one was taken for an
    /// edit of the first, the deleted one: updated in place into it, it took
    /// in another replica's edits of the deleted element, and lost that
    /// replica's edits of the one it was. It now pairs with the element it
    /// shares the most fields with.
    @Test func anElementEditedNextToADeletedOneKeepsConcurrentEdits() throws {
        let base = [Row(title: "alpha", done: false, note: "first"), Row(title: "beta", done: false, note: "second"),
                    Row(title: "gamma", done: false, note: "third")]
        var onLaptop = base, onPhone = base
        onLaptop.remove(at: 0)
        onLaptop[0].title = "beta!"
        onPhone[0].note = "first, edited"
        onPhone[1].done = true
        let merged = try merged(["rows": base], ["rows": onLaptop], ["rows": onPhone])
        #expect(merged == ["rows": [Row(title: "beta!", done: true, note: "second"), base[2]]])
    }

    /// The list has no move: an array written in another order keeps the
    /// longest run of elements in order where they are and deletes and
    /// inserts the others, as new objects holding the values written. So a
    /// concurrent edit of a moved element is made to the deleted one and is
    /// not read (it stays in the log), an edit of one that stayed is kept,
    /// and two replicas moving the same element make two of it.
    @Test func aMovedElementIsANewOneWithoutTheConcurrentEditsOfTheOld() throws {
        let base = [Row(title: "alpha", done: false, note: ""), Row(title: "beta", done: false, note: ""),
                    Row(title: "gamma", done: false, note: "")]
        let moved = [base[2], base[0], base[1]]
        var edited = base
        edited[0].done = true
        edited[2].note = "lost"
        #expect(try merged(["rows": base], ["rows": moved], ["rows": edited])
                == ["rows": [base[2], edited[0], base[1]]])
        #expect(try merged(["rows": base], ["rows": moved], ["rows": moved]) == ["rows": [base[2], base[2], base[0], base[1]]])
    }

    @Test func itemsPairWithTheReplacedElementsTheyShareTheMostWith() {
        func text(_ string: String) -> DocumentNode { .text(string) }
        #expect(Transaction.pairing(["alpha", "beta"].map(text), ["beta!"].map(text)) == [1])
        #expect(Transaction.pairing(["a", "b"].map(text), ["x", "y", "b2"].map(text)) == [0, nil, 1])
        // Sharing nothing, by position.
        #expect(Transaction.pairing(["a", "b"].map(text), ["x", "y", "z"].map(text)) == [0, 1, nil])
        #expect(Transaction.pairing(["a", "b", "c"].map(text), ["x"].map(text)) == [0])
        // A struct's fields weigh what they hold: a shared title outweighs
        // two shared flags, and a title alike in part counts nothing.
        func item(_ title: String, _ done: Bool) -> DocumentNode { .map(["title": .text(title), "done": .scalar(.bool(done))]) }
        #expect(Transaction.pairing([item("b0", true), item("b1", false)], [item("f2", false), item("b0", false)]) == [nil, 0])
        #expect(Transaction.pairing([item("item 10", true), item("item 11", false)],
                                    [item("item 12", false), item("item 10", false)]) == [nil, 0])
    }

    struct Checked: Codable, Identifiable {
        var id: String
        var done: Bool
    }

    @Test func itemsOfAnIdentifiableTypePairOnlyWithTheElementOfTheirID() {
        func read(_ id: String, _ done: Bool = false) -> DocumentNode { .map(["id": .text(id), "done": .scalar(.bool(done))]) }
        // As the bridge writes an item: a struct of a string and a bool always encodes.
        func written(_ id: String, _ done: Bool = false) -> DocumentNode { try! NodeEncoder.encoded(Checked(id: id, done: done), codingPath: []).node! }
        // Sharing `done`, or by position, items of other ids do not pair.
        #expect(Transaction.pairing([read("b1")], [written("f1")]) == [nil])
        #expect(Transaction.pairing([read("b0", true), read("b1")], [written("f2"), written("b0")]) == [nil, 0])
        #expect(Transaction.pairing([read("b1"), read("b2", true)], [written("b2")]) == [1])
        // An element written before its type had an id pairs as any other does.
        #expect(Transaction.pairing([.map(["done": .scalar(.bool(false))])], [written("f1")]) == [0])
        // Past `pairingLimit`, by id too: an item put in place of another,
        // or before all the others, pairs with none.
        let replaced = (0...100).map { read("b\($0)") }
        var items = (0..<100).map { written("b\($0)", true) }
        items[50] = written("new")
        #expect(replaced.count * items.count > Transaction.pairingLimit)
        #expect(Transaction.pairing(replaced, items) == items.indices.map { $0 == 50 ? nil : $0 })
        let newFirst = [written("new")] + (0...100).map { written("b\($0)", true) }
        #expect(Transaction.pairing(replaced, newFirst) == [nil] + Array(0...100))
        // An item whose element comes before the last pair (moved) pairs with none.
        let afterAMove = [read("b0"), read("x"), read("b0"), read("b1")] + (0..<3000).map { read("c\($0)") }
        #expect(Transaction.pairing(afterAMove, [written("b1"), written("b0"), written("x")] + (0..<3000).map { written("c\($0)") })
                == [3, nil, nil] + Array(4..<3004))
    }

    struct Errand: Codable, Equatable, Identifiable {
        var id: String
        var done: Bool
        var note: String
    }

    /// Ticking every item of a long list (past `pairingLimit`) and adding
    /// one before them replaced all of them by position: ids apart, each was
    /// deleted and written again, and another replica's concurrent edit of
    /// one was made to a deleted element. Items now pair by id.
    @Test func aLongListRewrittenWithAnItemAddedFirstKeepsConcurrentEdits() throws {
        let base = (0..<120).map { Errand(id: "errand \($0)", done: false, note: "") }
        var onLaptop = base.map { Errand(id: $0.id, done: true, note: $0.note) }
        onLaptop.insert(Errand(id: "first", done: false, note: ""), at: 0)
        var onPhone = base
        onPhone[70].note = "call back"
        var expected = onLaptop
        expected[71].note = "call back"
        #expect(try merged(["tasks": base], ["tasks": onLaptop], ["tasks": onPhone]) == ["tasks": expected])
    }

    /// An errand whose `id` is computed from its `slug`: stored, it has no
    /// field `id`.
    struct SlugErrand: ListedErrand {
        var slug: String
        var done = false
        var note = ""
        var id: String { slug }
        init(named name: String) { slug = name }
    }

    /// An errand whose stored `id` is encoded under the key `key`.
    struct KeyedErrand: ListedErrand {
        var id: String
        var done = false
        var note = ""
        enum CodingKeys: String, CodingKey {
            case id = "key", done, note
        }
        init(named name: String) { id = name }
    }

    /// An item of a list other replicas edit, of an `Identifiable` type.
    protocol ListedErrand: Codable, Equatable, Identifiable {
        init(named name: String)
        var done: Bool { get set }
        var note: String { get set }
    }

    /// Items of an `Identifiable` type keep their identity by their
    /// `Identifiable.id` itself, not by a field `id` they encode, which
    /// the two types here have not (review215): an `id` computed from
    /// another field, and one encoded under another key. They were paired
    /// as items without ids: by position past `pairingLimit` (a long list
    /// all ticked with an item added first gave each item's element the
    /// one before it, and the phone's note went to another item), and by
    /// what they share within it (an item written in place of a deleted
    /// one took the other replica's tick of that one). Written as they
    /// were, they store no more than before.
    @Test func itemsKeepTheirIdentityByTheirIDHoweverItIsEncoded() throws {
        try checkIdentity(of: SlugErrand.self)
        try checkIdentity(of: KeyedErrand.self)
        var errand = SlugErrand(named: "milk")
        errand.done = true
        #expect(try NodeEncoder.encoded(errand, codingPath: []).node?.fields
                == ["slug": .text("milk"), "done": .scalar(.bool(true)), "note": .text("")])
        #expect(try NodeEncoder.encoded(KeyedErrand(named: "milk"), codingPath: []).node?.fields
                == ["key": .text("milk"), "done": .scalar(.bool(false)), "note": .text("")])
    }

    func checkIdentity<T: ListedErrand>(of _: T.Type) throws {
        let base = (0..<120).map { T(named: "errand \($0)") }
        var onLaptop = base.map { errand in
            var ticked = errand
            ticked.done = true
            return ticked
        }
        onLaptop.insert(T(named: "first"), at: 0)
        var onPhone = base
        onPhone[70].note = "call back"
        var expected = onLaptop
        expected[71].note = "call back"
        #expect(try merged(["tasks": base], ["tasks": onLaptop], ["tasks": onPhone]) == ["tasks": expected], "\(T.self)")

        let short = [T(named: "b0"), T(named: "b1")]
        var replaced = short, ticked = short
        replaced[1] = T(named: "f1")
        ticked[1].done = true
        #expect(try merged(["tasks": short], ["tasks": replaced], ["tasks": ticked]) == ["tasks": replaced], "\(T.self)")
    }

    struct Label: Codable, Hashable {
        var name: String
        var aliases: Set<String>
    }
    struct Labels: Codable, Equatable { var labels: Set<Label> }

    /// A struct read back lists its set's elements in an order of its own,
    /// so a set of such structs found none of them stored: written back
    /// unchanged, it deleted every element and appended it again, and,
    /// merged with another replica's removal of one, brought that one back.
    @Test func aSetOfStructsHoldingSetsWrittenBackIsNoChange() throws {
        let base = Labels(labels: Set((0..<5).map { i in Label(name: "l\(i)", aliases: Set((0..<8).map { "a\(i)\($0)" })) }))
        var doc = Document(replica: ReplicaID(1))
        try doc.transact { tx in try tx.write(base, into: .root) }
        let read = try doc.read(Labels.self, from: .root)
        let written = doc.versionVector
        try doc.transact { tx in try tx.write(read, into: .root) }
        #expect(doc.versionVector == written)
        var removed = read
        removed.labels.remove(try #require(removed.labels.first { $0.name == "l1" }))
        #expect(try merged(base, removed, read) == removed)
    }

    struct Post: Codable, Equatable {
        var title: String
        var likes: Int
        var votes: [Int]
    }

    @Test func aCounterWrittenBackIsIncrementedByTheDifference() throws {
        let laptop = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
        let id: DocumentID = "post"
        try laptop.create(id: id)
        let (likes, vote) = try laptop.edit(id) { tx in
            try tx.write(Post(title: "Hi", likes: 0, votes: []), into: .root)
            let likes = try tx.putObject(.root, key: "likes", kind: .counter)
            guard case .object(.list, let votes)? = try tx.document.get(.root, key: "votes") else { throw Oops() }
            let vote = try tx.insertObject(votes, at: 0, kind: .counter)
            return (likes, vote)
        }
        try phone.create(id: id)
        try phone.apply(id, laptop.changes(id))

        // Reading and writing back the same value changes nothing.
        let post = try laptop.read(id) { try $0.read(Post.self, from: .root) }
        #expect(post == Post(title: "Hi", likes: 0, votes: [0]))
        let version = try laptop.versionVector(id)
        try laptop.edit(id) { tx in try tx.write(post, into: .root) }
        #expect(try laptop.versionVector(id) == version)

        // A new total is an increment, so that concurrent ones add up.
        try laptop.edit(id) { tx in try tx.write(Post(title: "Hi", likes: 2, votes: [1]), into: .root) }
        try phone.edit(id) { tx in try tx.write(Post(title: "Hi", likes: 1, votes: [-1]), into: .root) }
        try laptop.apply(id, phone.changes(id, since: laptop.versionVector(id)))
        #expect(try laptop.read(id) { try $0.read(Post.self, from: .root) } == Post(title: "Hi", likes: 3, votes: [0]))
        #expect(try laptop.read(id) { [try $0.counter(likes), try $0.counter(vote)] } == [3, 0])
    }

    struct Card: Codable, Equatable {
        var title: String
        var body: String
        var tags: [String]
        var home: Address
        var likes: Int
        var due: Date?
    }

    /// A notes app reads a note into a form, the person edits it for a
    /// while, and a sync applies another replica's edits meanwhile: writing
    /// the form back with `write(_:into:)` made the note hold the form,
    /// undoing those edits (the other replica's tag, its words in the body,
    /// its likes). Written `editedFrom` the document as read, only what the
    /// form changed is written.
    @Test func aValueEditedFromAnEarlierReadingKeepsWhatOthersChangedSince() throws {
        let laptop = try DocumentStore.inMemory(), phone = try DocumentStore.inMemory()
        let card = Card(title: "Milk", body: "Buy milk", tags: ["food"], home: Address(street: "Main", zip: 1), likes: 5, due: nil)
        let id = try laptop.createDocument { tx in
            try tx.write(card, into: .root)
            let likes = try tx.putObject(.root, key: "likes", kind: .counter)
            try tx.increment(likes, by: 5)
        }
        try phone.create(id: id)
        try phone.apply(id, laptop.changes(id))

        // The form opens on the laptop.
        var form = try laptop.read(id) { try $0.read(Card.self, from: .root) }
        let seen = try laptop.read(id) { $0 }
        // The phone edits, and syncs.
        try phone.edit(id) { tx in
            var onPhone = try tx.document.read(Card.self, from: .root)
            onPhone.body += " today"
            onPhone.tags.append("urgent")
            onPhone.home.zip = 2
            onPhone.likes += 2
            onPhone.due = Date(timeIntervalSince1970: 1_000)
            try tx.write(onPhone, into: .root)
        }
        try laptop.apply(id, phone.changes(id, since: laptop.versionVector(id)))
        // The form is saved.
        form.title = "Oat milk"
        form.body = "Buy oat milk"
        form.home.street = "High"
        form.likes += 1
        let undone = try laptop.read(id) { doc in
            var copy = doc
            try copy.transact { tx in try tx.write(form, into: .root) }
            return try copy.read(Card.self, from: .root)
        }
        #expect(undone == form)
        // The document as saved is the next save's reading.
        let saved = try laptop.edit(id) { tx in
            try tx.write(form, into: .root, editedFrom: seen)
            return tx.document
        }

        let merged = Card(title: "Oat milk", body: "Buy oat milk today", tags: ["food", "urgent"], home: Address(street: "High", zip: 2),
                          likes: 8, due: Date(timeIntervalSince1970: 1_000))
        #expect(try laptop.read(id) { try $0.read(Card.self, from: .root) } == merged)
        // The form shows the note as saved: saved again unchanged, it changes
        // nothing; a field it then drops is removed.
        form = try saved.read(Card.self, from: .root)
        let version = try laptop.versionVector(id)
        try laptop.edit(id) { tx in try tx.write(form, into: .root, editedFrom: saved) }
        #expect(try laptop.versionVector(id) == version)
        var cleared = form
        cleared.due = nil
        try laptop.edit(id) { tx in try tx.write(cleared, into: .root, editedFrom: saved) }
        #expect(try laptop.read(id) { try $0.read(Card.self, from: .root) } == cleared)
    }

    /// A text another edit replaced since the reading (a new text object
    /// put at the key, not an edit of the one read) is no longer the text
    /// the form was edited from: the form's text is written as `write`
    /// writes it, not merged into the new object as if it were the old one.
    @Test func aTextReplacedSinceTheReadingIsWrittenAsTheFormHoldsIt() throws {
        struct Note: Codable, Equatable { var body: String }
        var document = Document(replica: ReplicaID(1))
        try document.transact { tx in try tx.write(Note(body: "Buy milk"), into: .root) }
        let seen = document
        try document.transact { tx in
            let replacement = try tx.putObject(.root, key: "body", kind: .text)
            try tx.insertText(replacement, at: 0, "Buy bread")
        }
        try document.transact { tx in try tx.write(Note(body: "Buy oat milk"), into: .root, editedFrom: seen) }
        #expect(try document.read(Note.self, from: .root) == Note(body: "Buy oat milk"))
    }

    struct Item: Codable, Equatable, FuzzedItem {
        var title: String
        var done: Bool
    }
    struct Checklist: Codable, Equatable {
        var name: String
        var items: [Item]
        var tags: Set<String>
    }

    static let groceries = Checklist(
        name: "Groceries", items: ["milk", "eggs", "bread"].map { Item(title: $0, done: false) }, tags: ["home"])

    /// A form opened on `base` here and edited with `edit`, while another
    /// replica edits the note with `meanwhile` and syncs; the form is then
    /// saved `editedFrom` the reading it opened on, and the replicas sync.
    /// What both read then (the same), and what a plain `write` of the form
    /// would have left.
    func savedForm<T: Codable & Equatable>(
        _ base: T, edit: (inout T) -> Void, meanwhile: (inout T) -> Void
    ) throws -> (saved: T, writtenWhole: T) {
        var here = Document(replica: ReplicaID(1)), there = Document(replica: ReplicaID(2))
        try here.transact { tx in try tx.write(base, into: .root) }
        try there.applyEncoded(here.encodeChanges())
        let seen = here
        var form = try seen.read(T.self, from: .root), theirs = try there.read(T.self, from: .root)
        edit(&form)
        meanwhile(&theirs)
        try there.transact { tx in try tx.write(theirs, into: .root) }
        try here.applyEncoded(there.encodeChanges(since: here.versionVector))
        var writtenWhole = here
        try writtenWhole.transact { tx in try tx.write(form, into: .root) }
        try here.transact { tx in try tx.write(form, into: .root, editedFrom: seen) }
        try there.applyEncoded(here.encodeChanges(since: there.versionVector))
        let saved = try here.read(T.self, from: .root)
        #expect(try there.read(T.self, from: .root) == saved)
        return (saved, try writtenWhole.read(T.self, from: .root))
    }

    /// A checklist ticked in a form while a sync added an item and deleted
    /// another: the list was written whole, as the form held it, so the
    /// added item was lost and the deleted one came back. Now the list gets
    /// only the form's edit, made to the element it was read from.
    @Test func aListEditedInAFormKeepsTheItemsASyncAddedAndDeleted() throws {
        let (saved, writtenWhole) = try savedForm(Self.groceries, edit: { form in
            form.items[1].done = true
            form.tags.insert("weekly")
        }, meanwhile: { theirs in
            theirs.items.remove(at: 2)
            theirs.items.insert(Item(title: "butter", done: false), at: 1)
            theirs.tags.insert("shared")
        })
        #expect(saved == Checklist(name: "Groceries", items: [Item(title: "milk", done: false), Item(title: "butter", done: false),
                                                                Item(title: "eggs", done: true)],
                                   tags: ["home", "weekly", "shared"]))
        #expect(writtenWhole.items.map(\.title) == ["milk", "eggs", "bread"] && writtenWhole.tags == ["home", "weekly"])
    }

    /// An element edited in a form while another replica edited another
    /// field of it: both edits stay, as for a struct that is a field.
    @Test func anElementEditedInAFormKeepsAnotherReplicasEditOfIt() throws {
        let (saved, writtenWhole) = try savedForm(Self.groceries, edit: { form in
            form.items[1].done = true
            form.items[2].title = "rye bread"
        }, meanwhile: { theirs in
            theirs.items[1].title = "eggs (6)"
            theirs.items.append(Item(title: "tea", done: false))
        })
        #expect(saved.items == [Item(title: "milk", done: false), Item(title: "eggs (6)", done: true),
                                Item(title: "rye bread", done: false), Item(title: "tea", done: false)])
        #expect(writtenWhole.items[1] == Item(title: "eggs", done: true))
    }

    /// A form that ticks an item, deletes the next and adds one first
    /// replaces a run of two items with two. Fields counted one each, the
    /// new item's `done` equal to the deleted one's weighed as much as the
    /// ticked item's title: the ticked item's element became the new item
    /// and the deleted one's became the ticked item, taking the other
    /// replica's tick of the deleted one, so the ticked item read done
    /// though both sides set it not done. (Seed 114 of the form fuzzer.)
    @Test func aTickedItemKeepsItsElementWhenTheFormDeletesAndAddsAroundIt() throws {
        let base = Checklist(name: "", items: [Item(title: "b0", done: true), Item(title: "b1", done: false)], tags: [])
        let (saved, _) = try savedForm(base, edit: { form in
            form.items = [Item(title: "f2", done: false), Item(title: "b0", done: false)]
        }, meanwhile: { theirs in
            theirs.items = [Item(title: "b0", done: false), Item(title: "b1", done: true)]
        })
        #expect(saved.items == [Item(title: "f2", done: false), Item(title: "b0", done: false)])
    }

    /// A form that adds an item before two it ticks: the ticked items'
    /// elements stay theirs, so an item the other replica inserted between
    /// them stays between them. Fields counted one each, they were taken
    /// for edits of their left neighbours (a tie of one shared `done` each),
    /// and the inserted item ended before the first. (Seed 1827 of the
    /// form fuzzer.)
    @Test func anItemInsertedBetweenTwoTickedInAFormStaysBetweenThem() throws {
        let base = Checklist(name: "", items: [Item(title: "b0", done: false), Item(title: "b1", done: false),
                                               Item(title: "b2", done: true), Item(title: "b3", done: false)], tags: [])
        let (saved, _) = try savedForm(base, edit: { form in
            form.items.insert(Item(title: "f1", done: false), at: 1)
            form.items[2].done = true
            form.items[3].done = false
        }, meanwhile: { theirs in
            theirs.items[1].done = true
            theirs.items[3].done = true
            theirs.items.insert(Item(title: "t2", done: true), at: 2)
        })
        #expect(saved.items == [Item(title: "b0", done: false), Item(title: "f1", done: false), Item(title: "b1", done: true),
                                Item(title: "t2", done: true), Item(title: "b2", done: false), Item(title: "b3", done: true)])
    }

    /// A form that replaces an item with a new one while another replica
    /// ticks the replaced one. Without ids, the new item, sharing `done`
    /// with it (or by position), is taken for an edit of it and takes the
    /// tick, as written in `Specs/storage.md`. Items of an `Identifiable`
    /// type are told apart by their ids: the new item is a new element, and
    /// the tick stays with the deleted one; so too with a plain `write`.
    /// (Seed 40 of the form fuzzer, among 40 of 5,000.)
    @Test func anItemWrittenInPlaceOfADeletedOneIsANewElementWhenItemsHaveIDs() throws {
        func items<T: FuzzedItem>(_ items: (String, Bool)...) -> [String: [T]] { ["items": items.map { T(title: $0.0, done: $0.1) }] }
        func replaceB1(_ checklist: inout [String: [IdentifiedItem]]) { checklist["items"]![1] = IdentifiedItem(title: "f1", done: false) }
        func tickB1(_ checklist: inout [String: [IdentifiedItem]]) { checklist["items"]![1].done = true }
        let base: [String: [IdentifiedItem]] = items(("b0", false), ("b1", false))
        let (saved, _) = try savedForm(base, edit: replaceB1, meanwhile: tickB1)
        #expect(saved == items(("b0", false), ("f1", false)))
        var replaced = base, ticked = base
        replaceB1(&replaced)
        tickB1(&ticked)
        #expect(try merged(base, replaced, ticked) == items(("b0", false), ("f1", false)))

        let plain: [String: [Item]] = items(("b0", false), ("b1", false))
        let (savedPlain, _) = try savedForm(plain, edit: { $0["items"]![1] = Item(title: "f1", done: false) },
                                            meanwhile: { $0["items"]![1].done = true })
        #expect(savedPlain == items(("b0", false), ("f1", true)))
    }

    /// An element another replica deleted meanwhile stays deleted unless
    /// the form changed it: then it comes back as the form holds it (an
    /// item new in the form may be paired with it for an edit), and scalar
    /// elements edited are replaced where they were: the other replica's
    /// inserts around them stay.
    @Test func anElementEditedInAFormThatASyncDeletedComesBackAsEdited() throws {
        let (saved, _) = try savedForm(Self.groceries, edit: { form in
            form.items[0].done = true
            form.items[2].title = "rye bread"
        }, meanwhile: { theirs in
            theirs.items.remove(at: 2)
            theirs.items.remove(at: 0)
        })
        #expect(saved.items == [Item(title: "milk", done: true), Item(title: "eggs", done: false), Item(title: "rye bread", done: false)])
        let (replaced, _) = try savedForm(Self.groceries, edit: { form in
            form.items[2] = Item(title: "jam", done: true)
        }, meanwhile: { theirs in
            theirs.items.remove(at: 2)
            theirs.items.remove(at: 1)
        })
        #expect(replaced.items == [Item(title: "milk", done: false), Item(title: "jam", done: true)])

        let (words, _) = try savedForm(["list": ["a", "b", "c"]], edit: { $0["list"]![1] = "B" }, meanwhile: { theirs in
            theirs["list"]!.insert("x", at: 1)
            theirs["list"]!.insert("y", at: 3)
        })
        #expect(words == ["list": ["a", "x", "B", "y", "c"]])
    }

    /// A checklist item the form fuzzer edits: an `Item`, told from the
    /// others by what it holds, or an `IdentifiedItem`, by its id.
    protocol FuzzedItem: Codable, Equatable {
        init(title: String, done: Bool)
        var title: String { get }
        var done: Bool { get set }
    }

    /// A checklist item whose id is its title (`Identifiable`): it is never
    /// taken for an edit of another item, however alike they are.
    struct IdentifiedItem: FuzzedItem, Identifiable {
        var id: String
        var done: Bool
        var title: String { id }
        init(title: String, done: Bool) {
            id = title
            self.done = done
        }
    }

    /// An edit of a checklist's items, in a form or by another replica.
    enum ItemEdit {
        case delete(Int), tick(Int), insert(title: String, done: Bool, at: Int)

        /// Random edits of `items`, the new items titled after `side`; the
        /// titles of the items of `items` deleted and ticked, and of those added.
        static func random<T: FuzzedItem>(of items: [T], side: String, using random: inout SeededGenerator)
            -> (edits: [ItemEdit], deleted: Set<String>, ticked: Set<String>, added: Set<String>) {
            var list = items, edits: [ItemEdit] = [], deleted: Set<String> = [], ticked: Set<String> = [], added: Set<String> = []
            for step in 0..<Int.random(in: 0...3, using: &random) {
                let untouched = list.indices.filter { !added.contains(list[$0].title) && !ticked.contains(list[$0].title) }
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where !list.isEmpty:
                    edits.append(.delete(Int.random(in: list.indices, using: &random)))
                case 1 where !untouched.isEmpty:
                    edits.append(.tick(untouched.randomElement(using: &random)!))
                default:
                    edits.append(.insert(title: "\(side)\(step)", done: Bool.random(using: &random),
                                         at: Int.random(in: 0...list.count, using: &random)))
                }
                switch edits.last! {
                case .delete(let index):
                    let title = list.remove(at: index).title
                    if added.remove(title) == nil { deleted.insert(title) }
                case .tick(let index):
                    list[index].done.toggle()
                    ticked.insert(list[index].title)
                case let .insert(title, done, index):
                    list.insert(T(title: title, done: done), at: index)
                    added.insert(title)
                }
            }
            return (edits, deleted, ticked.subtracting(deleted), added)
        }
    }

    /// `items` with `edits` made to them, in order.
    static func edited<T: FuzzedItem>(_ items: [T], _ edits: [ItemEdit]) -> [T] {
        var items = items
        for edit in edits {
            switch edit {
            case .delete(let index): items.remove(at: index)
            case .tick(let index): items[index].done.toggle()
            case let .insert(title, done, index): items.insert(T(title: title, done: done), at: index)
            }
        }
        return items
    }

    /// Random forms of a checklist (items added, deleted, ticked) saved
    /// while another replica edited its items, operation by operation: the
    /// replicas agree; a form saved with nothing done meanwhile is written
    /// as it is, an unchanged one leaves the other replica's edits as they
    /// are; and the items are the checklist's less those either side
    /// deleted (unless the form ticked it), plus those either side added,
    /// each side's in the order that side had them, each ticked as either
    /// side ticked it (an added one as its side added it). Each seed runs
    /// with items of an `Identifiable` type and with items without an id.
    @Test(arguments: 0..<UInt64(fuzzSeedCount(default: 200)))
    func randomListEditsFromAFormAndAnotherReplicaAllSurvive(seed: UInt64) throws {
        try checkRandomListEdits(of: IdentifiedItem.self, seed: seed)
        try checkRandomListEdits(of: Item.self, seed: seed)
    }

    func checkRandomListEdits<T: FuzzedItem>(of _: T.Type, seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let base = ["items": (0..<Int.random(in: 0...6, using: &random)).map {
            T(title: "b\($0)", done: Bool.random(using: &random))
        }]
        let form = ItemEdit.random(of: base["items"]!, side: "f", using: &random)
        let theirs = ItemEdit.random(of: base["items"]!, side: "t", using: &random)
        func saved(form formEdits: [ItemEdit], theirs theirEdits: [ItemEdit]) throws -> [T] {
            var here = Document(replica: ReplicaID(1)), there = Document(replica: ReplicaID(2))
            try here.transact { tx in try tx.write(base, into: .root) }
            try there.applyEncoded(here.encodeChanges())
            let seen = here
            try there.transact { tx in
                guard case .object(.list, let list)? = try tx.document.get(.root, key: "items") else { throw Oops() }
                for edit in theirEdits {
                    switch edit {
                    case .delete(let index):
                        try tx.delete(list, at: index)
                    case .tick(let index):
                        guard case .object(.map, let item) = try tx.document.list(list)[index],
                              case .scalar(.bool(let done))? = try tx.document.get(item, key: "done") else { throw Oops() }
                        try tx.put(item, key: "done", .bool(!done))
                    case let .insert(title, done, index):
                        try tx.write(T(title: title, done: done), into: tx.insertObject(list, at: index, kind: .map))
                    }
                }
            }
            try here.applyEncoded(there.encodeChanges(since: here.versionVector))
            let form = ["items": Self.edited(base["items"]!, formEdits)]
            try here.transact { tx in try tx.write(form, into: .root, editedFrom: seen) }
            try there.applyEncoded(here.encodeChanges(since: there.versionVector))
            let items = try here.read([String: [T]].self, from: .root)["items"]!
            #expect(try there.read([String: [T]].self, from: .root)["items"]! == items)
            return items
        }

        let baseItems = base["items"]!
        let items = try saved(form: form.edits, theirs: theirs.edits), titles = items.map(\.title)
        let kept = baseItems.map(\.title).filter {
            !form.deleted.contains($0) && (!theirs.deleted.contains($0) || form.ticked.contains($0))
        }
        #expect(titles.sorted() == (kept + form.added + theirs.added).sorted(), "\(T.self)")
        #expect(titles.filter(Set(kept).contains) == kept, "\(T.self)")
        // What each side added stays where that side put it among the items it held.
        for side in [form.edits, theirs.edits] {
            let sideTitles = Self.edited(baseItems, side).map(\.title)
            #expect(titles.filter(Set(sideTitles).contains) == sideTitles.filter(Set(titles).contains), "\(T.self)")
        }
        // A checklist item either side ticked is ticked (both ticking it set
        // the same value), one neither ticked is as it was, and an added
        // item is as its side added it. (Without ids, an item the form added
        // in place of one it deleted may be taken for an edit of that one,
        // and then keeps the other replica's tick of it, as any edit would:
        // so there it is held to its value only where the form deleted
        // nothing the other replica ticked.)
        let done = Dictionary(uniqueKeysWithValues: items.map { ($0.title, $0.done) })
        for item in baseItems where done[item.title] != nil {
            #expect(done[item.title] == (item.done != (form.ticked.contains(item.title) || theirs.ticked.contains(item.title))),
                    "\(T.self) \(item.title)")
        }
        let formAddedHeld = T.self is any Identifiable.Type || form.deleted.isDisjoint(with: theirs.ticked)
        let addedHeld = theirs.added.union(formAddedHeld ? form.added : [])
        for item in Self.edited(baseItems, form.edits) + Self.edited(baseItems, theirs.edits) where addedHeld.contains(item.title) {
            #expect(done[item.title] == item.done, "\(T.self) \(item.title)")
        }
        #expect(try saved(form: form.edits, theirs: []) == Self.edited(baseItems, form.edits), "\(T.self)")
        #expect(try saved(form: [], theirs: theirs.edits) == Self.edited(baseItems, theirs.edits), "\(T.self)")
    }

    /// Reordering in a form is, as in `write(_:into:)`, a delete and an
    /// insert of the moved element: another replica's concurrent edit of it
    /// is made to the deleted one and is not read, while its edits of the
    /// elements that stayed, and its inserts, are kept.
    @Test func anElementMovedInAFormIsANewOneWithoutTheConcurrentEditsOfTheOld() throws {
        let (saved, _) = try savedForm(Self.groceries, edit: { form in
            form.items.append(form.items.removeFirst())
        }, meanwhile: { theirs in
            theirs.items[0].done = true
            theirs.items[1].title = "eggs (6)"
            theirs.items.append(Item(title: "jam", done: false))
        })
        #expect(saved.items == [Item(title: "eggs (6)", done: false), Item(title: "bread", done: false),
                                Item(title: "milk", done: false), Item(title: "jam", done: false)])
    }

    @Test func aMissingFieldIsAClearDecodingError() throws {
        let (store, id) = try store(with: Self.ada)
        try store.edit(id) { tx in
            guard case .object(.map, let home)? = try tx.document.get(.root, key: "home") else { return }
            try tx.remove(home, key: "zip")
        }
        do {
            _ = try store.read(id) { try $0.read(Contact.self, from: .root) }
            Issue.record("decoded a contact without a zip")
        } catch let Swift.DecodingError.keyNotFound(key, context) {
            #expect(key.stringValue == "zip")
            #expect(context.codingPath.map(\.stringValue) == ["home"])
            #expect(context.debugDescription == "the document has no value at key \"zip\"")
        }
        #expect(throws: Swift.DecodingError.self) { try store.read(id) { try $0.read(Address.self, from: .root) } }
    }

    /// A date is seconds since 1970, and reads from an int as a `Double` does.
    @Test func aDateReadsFromAnIntAsADoubleDoes() throws {
        struct Event: Codable, Equatable { var at: Date; var weight: Double }
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try store.edit(id) { tx in
            try tx.put(.root, key: "at", .int(86_400))
            try tx.put(.root, key: "weight", .int(3))
        }
        #expect(try store.read(id) { try $0.read(Event.self, from: .root) } == Event(at: Date(timeIntervalSince1970: 86_400), weight: 3))
        try store.edit(id) { tx in try tx.put(.root, key: "at", .string("Monday")) }
        #expect(throws: Swift.DecodingError.self) { try store.read(id) { try $0.read(Event.self, from: .root) } }
    }

    /// A `Date` is stored as seconds since 1970, a `Double`, and a `Date`
    /// counts from 2001: most read back a fraction of a microsecond off,
    /// never further, and the date read back written again is no change.
    @Test func aDateReadsBackWithinAMicrosecondAndWritesBackAsNoChange() throws {
        struct Event: Codable, Equatable { var at: Date }
        let store = try DocumentStore.inMemory()
        let dates = (0..<200).map { Date(timeIntervalSinceReferenceDate: 786_000_000.123_456_789 + Double($0) * 0.000_1) }
        let id = try store.createDocument { tx in try tx.write(["dates": dates], into: .root) }
        let read = try store.read(id) { try $0.read([String: [Date]].self, from: .root) }["dates"] ?? []
        #expect(read.count == dates.count && read != dates)
        #expect(zip(read, dates).allSatisfy { abs($0.timeIntervalSince($1)) < 0.000_001 })
        let version = try store.versionVector(id)
        try store.edit(id) { tx in try tx.write(["dates": read], into: .root) }
        #expect(try store.versionVector(id) == version)
    }

    @Test func onlyKeyedValuesCanBeWrittenIntoAMap() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        #expect(throws: EncodingError.self) { try store.edit(id) { tx in try tx.write([1, 2], into: .root) } }
        #expect(throws: EncodingError.self) { try store.edit(id) { tx in try tx.write(["n": UInt64.max], into: .root) } }
    }

    /// Spelt as one string, a scalar (as `enum Status: String`), with its
    /// two spellings of "café": precomposed, and "e" followed by U+0301.
    enum Spelling: Codable, Equatable {
        case precomposed, decomposed
        var text: String { self == .precomposed ? "caf\u{E9}" : "cafe\u{301}" }
        init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            self = text.unicodeScalars.elementsEqual(Spelling.precomposed.text.unicodeScalars) ? .precomposed : .decomposed
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
    }
    struct Entry: Codable, Equatable {
        var word: String
        var spelling: Spelling
    }

    /// A form saved with "café" decomposed where it read it precomposed
    /// (a paste from a Mac's file name) was taken as unchanged, compared as
    /// `String`s are (canonically), and nothing was written: in a text, or
    /// in a string scalar. It is a change: the scalars are stored as given.
    @Test func aStringChangedOnlyInUnicodeNormalizationIsWritten() throws {
        let store = try DocumentStore.inMemory()
        let id = try store.createDocument()
        try store.edit(id) { tx in try tx.write(Entry(word: Spelling.precomposed.text, spelling: .precomposed), into: .root) }
        let seen = try store.read(id) { $0 }
        try store.edit(id) { tx in
            try tx.write(Entry(word: Spelling.decomposed.text, spelling: .decomposed), into: .root, editedFrom: seen)
        }
        let read = try store.read(id) { try $0.read(Entry.self, from: .root) }
        #expect(Array(read.word.utf8) == Array(Spelling.decomposed.text.utf8))
        #expect(read.spelling == .decomposed)
    }

    /// Two machines each put "café" in a `[String: Int]`, one precomposed,
    /// one decomposed: after a sync the map has both keys, which a Swift
    /// `Dictionary` takes for one. It read the value of the key last in
    /// byte order (the precomposed one) whichever was written last; it
    /// reads the value written last, spelled as it was written.
    @Test func keysDifferingOnlyInNormalizationReadAsTheOneWrittenLast() throws {
        let (precomposed, decomposed) = (Spelling.precomposed.text, Spelling.decomposed.text)
        var laptop = Document(replica: ReplicaID(1)), phone = Document(replica: ReplicaID(2))
        try laptop.transact { tx in try tx.write([precomposed: 1], into: .root) }
        try phone.transact { tx in try tx.write([decomposed: 2], into: .root) }
        try phone.transact { tx in try tx.write([decomposed: 3], into: .root) }  // the greater stamp
        try laptop.applyEncoded(phone.encodeChanges())
        try phone.applyEncoded(laptop.encodeChanges())
        for replica in [laptop, phone] {
            #expect(try replica.keys(.root).count == 2)
            let read = try replica.read([String: Int].self, from: .root)
            #expect(read.map { Array($0.key.utf8) } == [Array(decomposed.utf8)])
            #expect(read[decomposed] == 3)
        }

        // Written back unchanged, nothing changes; edited, the key read is written.
        let (unchanged, version) = (try laptop.read([String: Int].self, from: .root), laptop.versionVector)
        try laptop.transact { tx in try tx.write(unchanged, into: .root) }
        #expect(laptop.versionVector == version)
        try laptop.transact { tx in try tx.write([decomposed: 4], into: .root) }
        #expect(try laptop.read([String: Int].self, from: .root) == [decomposed: 4])
        try laptop.transact { tx in try tx.write([precomposed: 5], into: .root) }
        #expect(try laptop.read([String: Int].self, from: .root).map { Array($0.key.utf8) } == [Array(precomposed.utf8)])
    }
}
