/// The loaded documents a `DocumentStore` keeps, at most `capacity` of
/// them. Each matches the file (`DocumentStore.cache`), so one dropped is
/// only loaded again when next used: without a bound, a sync that touched
/// every document of a large store kept them all in memory (1.2 GB for
/// 110,000 small notes).
struct DocumentCache {
    private var entries: [DocumentID: (document: DocumentStore.LoadedDocument, lastUse: UInt64)] = [:]
    private var uses: UInt64 = 0
    let capacity: Int

    /// A capacity below zero keeps none, as zero does.
    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    /// A document put in counts as just used.
    subscript(id: DocumentID) -> DocumentStore.LoadedDocument? {
        get { entries[id]?.document }
        set {
            guard let newValue else {
                entries[id] = nil
                return
            }
            uses += 1
            entries[id] = (newValue, uses)
            if entries.count > capacity { dropLeastRecentlyUsed() }
        }
    }

    /// Counts a document read as just used.
    mutating func touch(_ id: DocumentID) {
        uses += 1
        entries[id]?.lastUse = uses
    }

    mutating func removeValue(forKey id: DocumentID) -> DocumentStore.LoadedDocument? {
        entries.removeValue(forKey: id)?.document
    }

    mutating func removeAll() {
        entries = [:]
    }

    var count: Int { entries.count }

    /// Keeps the half used most recently: half at a time, as sorting for
    /// every document put in would cost more than loading it again.
    private mutating func dropLeastRecentlyUsed() {
        let kept = entries.sorted { $0.value.lastUse > $1.value.lastUse }.prefix(capacity - capacity / 2)
        entries = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }
}
