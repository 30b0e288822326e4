/// Rows of cells printed in aligned columns, two spaces apart; a row's
/// last cell is not padded, and its empty cells at its end are left out. Widths count terminal columns (`TerminalText`:
/// two for Chinese, Japanese and Korean characters and emoji), and ignore
/// style marks.
struct Table {
    var header: [String]?
    var rows: [[String]]
    var indent = 0

    init(header: [String]? = nil, rows: [[String]], indent: Int = 0) {
        self.header = header
        self.rows = rows
        self.indent = indent
    }

    func render() -> String {
        lines.joined(separator: "\n")
    }

    /// The lines of `render()`, each made as it is read, for a table too
    /// long to hold as one string (`Output.print(_:)` of a table).
    var lines: some Sequence<String> {
        // Cells made safe first, so that widths count what will be shown;
        // a tab or a line break in one (a synced title) would break its row.
        let all = ((header.map { [$0] } ?? []) + rows).map { $0.map { TerminalText.safe($0, asOneLine: true) } }
        let columnCount = all.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columnCount)
        for row in all {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], TerminalText.width(cell)) }
        }
        return all.lazy.map { [indent] full in
            // Empty cells at a row's end would print as trailing spaces (a note with no tags).
            let row = Array(full.reversed().drop(while: \.isEmpty).reversed())
            let cells = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - TerminalText.width(cell))
            }
            return String(repeating: " ", count: indent) + cells.joined(separator: "  ")
        }
    }
}
