/// The next element of `stream`, or nil if none comes within `seconds`: a
/// generous bound, for an element that must come eventually, never a
/// timing to assert (the machine may be slow). Iterating ends the stream
/// for any later iteration.
public func nextElement<Element: Sendable>(of stream: AsyncStream<Element>, within seconds: Double = 60) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
