import Foundation

/// One day's files of `quire-bench suite` in a directory: `DATE.json`, which
/// holds every figure and is read back by the next run, and `DATE.md` and
/// `DATE-FAMILY.svg`, made from it. The runs of a day accumulate: each
/// replaces the workloads it measured and keeps the others.
public struct SuiteResultsFiles: Sendable {
    public var directory: String
    public var date: String

    public init(directory: String, date: String) {
        self.directory = directory
        self.date = date
    }

    public var jsonPath: String { "\(directory)/\(date).json" }
    public var markdownPath: String { "\(directory)/\(date).md" }
    public func chartPath(_ family: SuiteWorkload.Family) -> String { "\(directory)/\(date)-\(family.rawValue).svg" }

    /// The workloads of the day's earlier runs; none without a JSON file. A
    /// JSON file that cannot be read as a report is moved aside rather than
    /// overwritten (a person may want its figures back), and `setAside` says
    /// why and where to. Throws only when the file cannot be read or moved.
    public func readEarlierResults() throws -> (results: [WorkloadResult], setAside: String?) {
        guard FileManager.default.fileExists(atPath: jsonPath) else { return ([], nil) }
        let data = try Data(contentsOf: URL(fileURLWithPath: jsonPath))
        do {
            return (try Self.results(json: data), nil)
        } catch {
            let aside = try setAsideJSON()
            return ([], "\(jsonPath) is not a suite report (\(Self.describe(error))); moved it to \(aside)")
        }
    }

    /// Writes the JSON, the Markdown and one chart per family of `report`,
    /// each whole or not at all: an interrupted write leaves the previous file.
    public func write(_ report: SuiteReport) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.write(report.json, to: jsonPath)
        try writeMarkdownAndCharts(report)
    }

    /// The files made from the JSON: the Markdown and one chart per family.
    public func writeMarkdownAndCharts(_ report: SuiteReport) throws {
        try Self.write(report.markdown, to: markdownPath)
        for chart in report.charts { try Self.write(chart.svg, to: chartPath(chart.family)) }
    }

    /// The day's report as its JSON file keeps it, with the machine, commit
    /// and compiler of the run that wrote it last.
    public func readReport() throws -> SuiteReport {
        let data = try Data(contentsOf: URL(fileURLWithPath: jsonPath))
        let stored = try JSONDecoder().decode(StoredReport.self, from: data)
        return SuiteReport(
            results: try Self.results(json: data), command: stored.command, date: date,
            machine: stored.machine ?? "not recorded", commit: stored.commit, swiftVersion: stored.swift)
    }

    /// The marks around the suite's part of `Benchmarks/RESULTS.md`: people
    /// write the rest (targets, the trace, store and sync figures).
    static let resultsSectionStart = "<!-- quire-bench suite: start -->"
    static let resultsSectionEnd = "<!-- quire-bench suite: end -->"

    /// `document` with its suite part replaced by `report`, whose headings
    /// go one level down to sit under the document's; a document without a
    /// suite part gets one at the end.
    public static func replacingSuiteSection(in document: String, with report: String) -> String {
        let demoted = report.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("#") ? "#" + $0 : String($0) }
            .joined(separator: "\n")
        let section = resultsSectionStart + "\n" + demoted + "\n" + resultsSectionEnd
        guard let start = document.range(of: resultsSectionStart),
              let end = document.range(of: resultsSectionEnd, range: start.upperBound..<document.endIndex) else {
            return document + (document.hasSuffix("\n") || document.isEmpty ? "" : "\n") + "\n" + section + "\n"
        }
        return document.replacingCharacters(in: start.lowerBound..<end.upperBound, with: section)
    }

    public static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// The workloads of a report's JSON text. A workload without a command
    /// (reports written before the runs of a day accumulated) has the report's.
    static func results(json: Data) throws -> [WorkloadResult] {
        let report = try JSONDecoder().decode(StoredReport.self, from: json)
        return report.workloads.map { stored in
            var result = WorkloadResult(
                name: stored.name, family: stored.family, description: stored.description,
                command: stored.command ?? report.command, ops: stored.ops, figures: stored.libraries)
            result.mergeTurnsFailure = stored.mergeTurnsFailure
            result.mergeTimedAfterUntimed = stored.mergeTimedAfterUntimed
            return result
        }
    }

    /// Moves the JSON file to the first free `DATE.damaged.json`, `DATE.damaged-2.json`, ...
    private func setAsideJSON() throws -> String {
        var number = 1
        func path() -> String { "\(directory)/\(date).damaged\(number > 1 ? "-\(number)" : "").json" }
        while FileManager.default.fileExists(atPath: path()) { number += 1 }
        try FileManager.default.moveItem(atPath: jsonPath, toPath: path())
        return path()
    }

    /// A decoding error as the place in the file and what is wrong there.
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        let context: DecodingError.Context
        switch error {
        case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c): context = c
        @unknown default: return "\(error)"
        }
        let place = context.codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
        return place.isEmpty ? context.debugDescription : "at \(place): \(context.debugDescription)"
    }

    private struct StoredReport: Decodable {
        var command: String
        var machine: String?
        /// nil in reports from before they were recorded.
        var commit: String?
        var swift: String?
        var workloads: [StoredWorkload]
    }

    private struct StoredWorkload: Decodable {
        var name: String
        var family: SuiteWorkload.Family
        var description: String
        var command: String?
        var ops: Int?
        var libraries: [LibraryFigures]
        var mergeTurnsFailure: String?
        /// nil in days recorded before it (merged in turns the older way, if in turns).
        var mergeTimedAfterUntimed: Bool?
    }
}

extension SuiteReport {
    /// `earlier` with the workloads `newer` measured replaced and the others
    /// kept, in the order of the names in `order` (others last, as they were).
    public static func merging(_ newer: [WorkloadResult], into earlier: [WorkloadResult], order: [String]) -> [WorkloadResult] {
        let replaced = Set(newer.map(\.name))
        let merged = earlier.filter { !replaced.contains($0.name) } + newer
        let rank = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return merged.enumerated()
            .sorted { (rank[$0.element.name] ?? Int.max, $0.offset) < (rank[$1.element.name] ?? Int.max, $1.offset) }
            .map(\.element)
    }
}

// Reading back what `SuiteReport.json` writes.

extension SuiteWorkload.Family: Decodable {}

extension Spread: Decodable {
    private enum CodingKeys: String, CodingKey { case median, min, max }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            median: try container.decode(Double.self, forKey: .median),
            min: try container.decode(Double.self, forKey: .min), max: try container.decode(Double.self, forKey: .max))
    }
}

extension Measure: Decodable {
    private enum CodingKeys: String, CodingKey { case name, unit, median, min, max }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name), unit = try container.decode(String.self, forKey: .unit)
        let median = try container.decode(Double.self, forKey: .median)
        switch (try container.decodeIfPresent(Double.self, forKey: .min), try container.decodeIfPresent(Double.self, forKey: .max)) {
        case (nil, nil):
            self.init(name, unit, exactly: median)
        case let (min?, max?) where min <= max:
            self.init(name, unit, Spread(median: median, min: min, max: max))
        default:
            throw DecodingError.dataCorruptedError(forKey: .min, in: container, debugDescription: "min and max are not a range")
        }
    }
}

extension LibraryFigures: Decodable {
    private enum CodingKeys: String, CodingKey {
        case library, version, ok, runs, local = "localMs", emptyLoop = "emptyLoopMs", merge = "mergeMs", mergeRounds
        case encode = "encodeMs", load = "loadMs", encodedBytes, sentHistoryBytes, snapshotBytes, memoryBytes, measures, failures
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            library: try container.decode(String.self, forKey: .library), ok: try container.decode(Bool.self, forKey: .ok),
            runs: try container.decode(Int.self, forKey: .runs))
        version = try container.decodeIfPresent(String.self, forKey: .version)
        local = try container.decodeIfPresent(Spread.self, forKey: .local)
        emptyLoop = try container.decodeIfPresent(Spread.self, forKey: .emptyLoop)
        merge = try container.decodeIfPresent(Spread.self, forKey: .merge)
        mergeRounds = try container.decodeIfPresent(Int.self, forKey: .mergeRounds)
        encode = try container.decodeIfPresent(Spread.self, forKey: .encode)
        load = try container.decodeIfPresent(Spread.self, forKey: .load)
        encodedBytes = try container.decodeIfPresent(Int.self, forKey: .encodedBytes)
        // Reports from before it was measured have no sentHistoryBytes.
        sentHistoryBytes = try container.decodeIfPresent(Int.self, forKey: .sentHistoryBytes)
        snapshotBytes = try container.decodeIfPresent(Int.self, forKey: .snapshotBytes)
        memoryBytes = try container.decodeIfPresent(Int.self, forKey: .memoryBytes)
        // Reports from before the store and sync families have no measures.
        measures = try container.decodeIfPresent([Measure].self, forKey: .measures) ?? []
        failures = try container.decode([String].self, forKey: .failures)
    }
}
