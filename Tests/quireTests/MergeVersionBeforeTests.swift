import Foundation
import Quire
@testable import quire
import Testing

/// `quire merge` plans, then writes; the version it lists to diff from
/// (`quire diff ID --from`) is the one the writing transaction found.
@Suite struct MergeVersionBeforeTests {
    /// An edit another process commits between the plan and the write is
    /// in the version before, so merge's listing does not show it as brought.
    @Test func anEditCommittedAfterPlanningIsNotShownAsBrought() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            try quire.ok(["note", "edit", id, "--append", " eggs"], store: phone)
            let store = try Context.open(laptop, readOnly: false, missingAdvice: "")
            let other = try Context.open(phone, readOnly: true, missingAdvice: "")
            var merge = try StoreMerge(into: store, from: other)
            // Another process edits the note after the plan was made.
            try quire.ok(["note", "edit", id, "--title", "Shopping"], store: laptop)
            let edited = try quire.ok(["vv", id], store: laptop).trimmingCharacters(in: .whitespacesAndNewlines)
            try merge.apply(to: store)
            let plan = try #require(merge.documents.first { $0.id.rawValue == id })
            #expect(plan.versionBefore.description == edited, "\(plan.versionBefore) is not \(edited), the version after the other edit")
        }
    }

    /// Changes another process merged between the plan and the write are
    /// not listed as brought: the note its write applied nothing to is
    /// left out (it was listed, with the plan's count), and the others
    /// count what it applied. (`tablet` holds the phone's edit of the note,
    /// not its new note, and is merged in by that other process.)
    @Test func changesAnotherProcessMergedAfterPlanningAreNotListedAsBrought() throws {
        try withRunner { quire in
            let stores = try MergeStoryTests.TwoStores(quire)
            let (laptop, phone, id) = (stores.laptop, stores.phone, stores.id)
            let tablet = quire.directory + "/tablet.quire"
            try quire.ok(["note", "edit", id, "--append", " eggs"], store: phone)
            try quire.ok(["init"], store: tablet)
            try quire.ok(["merge", phone], store: tablet)
            let trip = try quire.ok(["note", "new", "--title", "Trip"], store: phone).trimmingCharacters(in: .newlines)
            let store = try Context.open(laptop, readOnly: false, missingAdvice: "")
            let other = try Context.open(phone, readOnly: true, missingAdvice: "")
            var merge = try StoreMerge(into: store, from: other)
            #expect(merge.incomingCount == 2)
            try quire.ok(["merge", tablet], store: laptop)
            try merge.apply(to: store)
            #expect(merge.documents.map(\.id.rawValue) == [trip] && merge.incomingCount == 1, "\(merge.documents.map(\.id))")
            #expect(merge.documents.first?.isNew == true)
        }
    }
}
