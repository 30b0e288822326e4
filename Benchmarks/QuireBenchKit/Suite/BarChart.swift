import Foundation

/// A horizontal bar chart as hand-written SVG text (no dependencies): one or
/// more panels, each a list of groups (workloads) with one bar per series
/// (library). A panel whose values span more than 10× uses a log scale.
public struct BarChart {
    public struct Panel {
        public var title: String
        public var unit: String
        /// Each group's label and one value per series (nil: not measured).
        public var groups: [(label: String, values: [Double?])]
        /// Each group's runs, fastest to slowest, one per series (nil: none),
        /// drawn as a line across the bar's end; empty for values measured once.
        public var ranges: [[ClosedRange<Double>?]]

        public init(title: String, unit: String, groups: [(label: String, values: [Double?])], ranges: [[ClosedRange<Double>?]] = []) {
            self.title = title
            self.unit = unit
            self.groups = groups
            self.ranges = ranges
        }
    }

    public var title: String
    public var series: [String]
    public var panels: [Panel]

    public init(title: String, series: [String], panels: [Panel]) {
        self.title = title
        self.series = series
        self.panels = panels
    }

    private static let colors = ["#d95f02", "#1b9e77", "#7570b3", "#e7298a"]
    private static let barArea = 600.0, barHeight = 13.0
    /// Room for the longest group label (11 px text, about 6 px a character), at least 170 px.
    private var labelWidth: Double {
        let longest = panels.flatMap { $0.groups.map(\.label.count) }.max() ?? 0
        return max(170, Double(longest) * 6 + 12)
    }
    private var width: Double { labelWidth + Self.barArea + 130 }

    public var svg: String {
        var body = ""
        var y = 30.0
        body += text(x: 10, y: 20, title, size: 16, weight: "bold")
        // Legend: one swatch per series.
        for (index, name) in series.enumerated() {
            let x = labelWidth + Double(index) * 110
            body += "<rect x=\"\(x)\" y=\"\(y)\" width=\"12\" height=\"12\" fill=\"\(Self.colors[index % 4])\"/>"
            body += text(x: x + 16, y: y + 11, name, size: 12)
        }
        y += 30
        for panel in panels { body += draw(panel, y: &y) }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(y + 10))" \
            font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>\(body)</svg>

            """
    }

    private func draw(_ panel: Panel, y: inout Double) -> String {
        let values = panel.groups.flatMap { $0.values.compactMap { $0 } }.filter { $0 > 0 }
        let low = values.min() ?? 1, high = values.max() ?? 1
        let logScale = high / low > 10
        // The axis: powers of ten around the values on a log scale, else 0 to a round maximum.
        // A log axis starts a decade below the power of ten under the smallest value:
        // started at that power, a value just above it (1.04 ms against 1.49) drew a
        // bar of a few pixels beside one ten times longer, and a value of exactly
        // 1 or 10 none at all.
        let axisLow = logScale ? floor(log10(low)) - 1 : 0
        let axisHigh = logScale ? ceil(log10(high)) : Self.roundUp(high)
        func length(_ value: Double) -> Double {
            let fraction = logScale ? (log10(value) - axisLow) / max(axisHigh - axisLow, 1) : value / max(axisHigh, 1e-12)
            return max(1, fraction * Self.barArea)
        }
        let spread = panel.ranges.isEmpty ? "" : ", line: fastest to slowest run"
        var out = text(x: 10, y: y + 14, "\(panel.title) (\(panel.unit)\(logScale ? ", log scale" : "")\(spread))", size: 13, weight: "bold")
        y += 24
        let top = y
        for (groupIndex, group) in panel.groups.enumerated() {
            let groupHeight = Double(series.count) * Self.barHeight
            out += text(x: labelWidth - 6, y: y + groupHeight / 2 + 4, group.label, size: 11, anchor: "end")
            for (index, value) in group.values.enumerated() {
                let barY = y + Double(index) * Self.barHeight
                if let value, value > 0 {
                    let barLength = length(value)
                    out += "<rect class=\"bar\" data-series=\"\(Self.escape(series[index]))\" x=\"\(labelWidth)\" y=\"\(barY)\" "
                        + "width=\"\(Self.format(barLength))\" height=\"\(Self.barHeight - 2)\" fill=\"\(Self.colors[index % 4])\"/>"
                    var end = barLength
                    if groupIndex < panel.ranges.count, index < panel.ranges[groupIndex].count,
                       let range = panel.ranges[groupIndex][index], range.lowerBound > 0, range.lowerBound < range.upperBound {
                        let (from, to) = (labelWidth + length(range.lowerBound), labelWidth + length(range.upperBound))
                        let middle = Self.format(barY + (Self.barHeight - 2) / 2)
                        out += "<line class=\"spread\" x1=\"\(Self.format(from))\" y1=\"\(middle)\" x2=\"\(Self.format(to))\" y2=\"\(middle)\" "
                            + "stroke=\"#000\" stroke-width=\"1.5\"/>"
                        end = max(end, to - labelWidth)
                    }
                    out += text(x: labelWidth + end + 4, y: barY + 10, Self.formatValue(value), size: 10)
                } else {
                    out += text(x: labelWidth + 4, y: barY + 10, "\(series[index]): not measured", size: 10, fill: "#888")
                }
            }
            y += groupHeight + 6
        }
        // Axis line and ticks.
        out += "<line x1=\"\(labelWidth)\" y1=\"\(y)\" x2=\"\(labelWidth + Self.barArea)\" y2=\"\(y)\" stroke=\"#333\"/>"
        let ticks = logScale ? Array(stride(from: axisLow, through: axisHigh, by: 1)).map { pow(10, $0) }
            : (0...4).map { axisHigh * Double($0) / 4 }
        for tick in ticks {
            let x = labelWidth + (logScale ? (log10(tick) - axisLow) / max(axisHigh - axisLow, 1) : tick / max(axisHigh, 1e-12)) * Self.barArea
            out += "<line x1=\"\(Self.format(x))\" y1=\"\(top - 2)\" x2=\"\(Self.format(x))\" y2=\"\(y + 4)\" stroke=\"#ddd\"/>"
            out += text(x: x, y: y + 16, Self.formatValue(tick, trailingZeros: false), size: 10, anchor: "middle")
        }
        y += 30
        return out
    }

    private func text(x: Double, y: Double, _ content: String, size: Int, weight: String = "normal",
                      anchor: String = "start", fill: String = "#000") -> String {
        "<text x=\"\(Self.format(x))\" y=\"\(Self.format(y))\" font-size=\"\(size)\" font-weight=\"\(weight)\" "
            + "text-anchor=\"\(anchor)\" fill=\"\(fill)\">\(Self.escape(content))</text>"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    /// 3 significant figures, with k/M/G for large numbers; trailing zeros
    /// kept for a measured value, so that 6.00M op/s does not read as less
    /// exact than 5.98M, and dropped for an axis tick (1, 10, 100).
    static func formatValue(_ value: Double, trailingZeros: Bool = true) -> String {
        func significant(_ value: Double) -> String {
            let text = String(format: trailingZeros ? "%#.3g" : "%.3g", value)
            return text.hasSuffix(".") ? String(text.dropLast()) : text
        }
        for (scale, suffix) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] where value >= scale {
            return significant(value / scale) + suffix
        }
        return significant(value)
    }

    /// 1, 2 or 5 times a power of ten, at least `value`.
    private static func roundUp(_ value: Double) -> Double {
        let power = pow(10, floor(log10(max(value, 1e-12))))
        return [1.0, 2, 5, 10].map { $0 * power }.first { $0 >= value } ?? value
    }
}
