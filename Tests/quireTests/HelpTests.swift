@testable import quire
import Testing

/// What `--help` tells a newcomer holds: every example it gives, and
/// every option its usage lines name, is one the command line takes.
@Suite struct HelpTests {
    /// Every command, with the words that name it (`["note", "new"]`).
    static func allCommands(_ command: Command = QuireTool.root, path: [String] = []) -> [(command: Command, path: [String])] {
        [(command, path)] + command.subcommands.flatMap { allCommands($0, path: path + [$0.name]) }
    }

    /// The words a shell makes of `line`'s `quire` command: quotes taken
    /// off, and what comes before it (`VAR=value`, a pipe's writer) left out.
    static func quireWords(_ line: String) -> [String]? {
        var words: [String] = [], word = "", inWord = false, quote: Character?
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == " " {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(character)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words.lastIndex(of: "quire").map { Array(words[($0 + 1)...]) }
    }

    @Test func everyExampleIsACommandLineQuireTakes() throws {
        let parser = ArgumentParser(root: QuireTool.root)
        for (command, path) in Self.allCommands() {
            for example in command.examples {
                let words = try #require(Self.quireWords(example), "\(path): \(example)")
                #expect(throws: Never.self, "quire \(path.joined(separator: " ")) --help: \(example)") {
                    _ = try parser.parse(words, environment: [:])
                }
            }
        }
    }

    @Test func everyOptionAUsageLineNamesIsOneTheCommandTakes() throws {
        for (command, path) in Self.allCommands() {
            for line in command.usage {
                let named = line.split(whereSeparator: { " []|.".contains($0) }).filter { $0.hasPrefix("--") }
                for name in named where name != "--store" {
                    #expect(command.option(named: String(name)) != nil, "quire \(path.joined(separator: " ")) --help names \(name): \(line)")
                }
            }
        }
    }
}
