package io.hcomm4j.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the project's Markdown says about the {@code hcomm} commands, for {@link HelpMatchesDocsTest}: the command lines
 * it shows ({@code hcomm perf allreduce -b 4K ...} in code blocks and in {@code `...`} spans) and the defaults it claims
 * for their options in prose.
 *
 * <p>A default claim is a backticked option followed, before the next backticked option and the end of the sentence,
 * by one of: {@code (default X}, {@code (default: X}, {@code , default X}, {@code default X} right after the option,
 * {@code X by default}; or {@code `--opt X`, the default} / {@code `--opt X` (the default}; or {@code `X` (default}
 * / {@code `X` (the default} (a value in backticks). It belongs to the command last named ({@code hcomm perf},
 * {@code ./hcomm perf ...}) in the same section, up to that point; a claim in a section that names no command is not one
 * about the commands (the examples' own options, say).
 */
final class DocClaims {
    /** The commands whose options are checked. */
    static final List<String> COMMANDS = List.of("launch", "perf", "status", "store", "tune", "demo", "trace");

    private static final Pattern COMMAND = Pattern.compile("(?<![\\w/.-])(?:\\./)?hcomm (" + String.join("|", COMMANDS) + ")(?=\\s|$|`)");
    private static final Pattern OPTION_SPAN = Pattern.compile("`(-{1,2}[a-zA-Z][\\w-]*)(?:[ =]([^`]*))?`");
    private static final Pattern SPAN = Pattern.compile("`([^`]+)`");
    private static final Pattern SENTENCE_END = Pattern.compile("\\.\\s|;\\s");
    private static final Pattern OWN_VALUE_IS_DEFAULT = Pattern.compile("^\\s*[,(]\\s*(?:the\\s+)?default\\b");
    private static final Pattern VALUE_SPAN_IS_DEFAULT = Pattern.compile("`([^`-][^`]*)`\\s*[,(]\\s*(?:the\\s+)?default\\b");
    private static final Pattern DEFAULT_THEN_VALUE = Pattern.compile("(?:^\\s*|[(,]\\s*)default:?\\s+([^,;):]+)");
    private static final Pattern VALUE_BY_DEFAULT = Pattern.compile("(?:^|[,(:])\\s*([^,(:]+?)\\s+by default\\b");

    /**
     * A command line the docs show.
     *
     * @param where   file:line
     * @param command the subcommand ({@code perf})
     * @param text    what follows the subcommand's name
     */
    record CommandLineUse(String where, String command, String text) {
    }

    /**
     * A default the docs claim for an option.
     *
     * @param where   file:line of the paragraph
     * @param command the subcommand it belongs to
     * @param option  the option as written ({@code --iters}, {@code -w})
     * @param value   the claimed default, as written ({@code 20 000}, {@code native})
     */
    record DefaultClaim(String where, String command, String option, String value) {
    }

    /**
     * A backticked option in the prose of a section (not in a table: the README's tables document the examples' own
     * options).
     *
     * @param where    file:line of the paragraph
     * @param option   the option as written
     * @param commands the commands the whole section names (filled in as the section is read)
     */
    record ProseOption(String where, String option, java.util.Set<String> commands) {
    }

    private final List<CommandLineUse> commandLines = new ArrayList<>();
    private final List<DefaultClaim> defaults = new ArrayList<>();
    private final List<ProseOption> proseOptions = new ArrayList<>();
    private java.util.Set<String> sectionCommands = new java.util.TreeSet<>();

    List<CommandLineUse> commandLines() {
        return commandLines;
    }

    List<DefaultClaim> defaults() {
        return defaults;
    }

    List<ProseOption> proseOptions() {
        return proseOptions;
    }

    /** Reads one Markdown file, {@code name} as it is to be named in messages. */
    void read(String name, String markdown) {
        String command = null; // the last command named in this section
        boolean code = false;
        List<String> paragraph = new ArrayList<>();
        int paragraphLine = 0;
        String[] lines = markdown.split("\n", -1);
        for (int i = 0; i <= lines.length; i++) {
            String line = i < lines.length ? lines[i] : "";
            boolean fence = line.startsWith("```");
            boolean heading = !code && line.startsWith("#");
            boolean newItem = !code && (line.isBlank() || line.startsWith("|") || line.matches("\\s*[-*] .*"));
            if (!paragraph.isEmpty() && (fence || heading || newItem || code)) {
                command = prose(name + ":" + paragraphLine, String.join(" ", paragraph), command);
                paragraph.clear();
            }
            if (fence) {
                code = !code;
                continue;
            }
            String where = name + ":" + (i + 1);
            if (code) {
                String last = commandLinesOf(where, line);
                if (last != null) command = last;
                continue;
            }
            if (heading) {
                command = null;
                sectionCommands = new java.util.TreeSet<>();
                for (Matcher m = SPAN.matcher(line); m.find(); ) {
                    String last = commandLinesOf(where, m.group(1));
                    if (last != null) command = last;
                }
                continue;
            }
            if (line.isBlank()) continue;
            if (paragraph.isEmpty()) paragraphLine = i + 1;
            paragraph.add(line.trim());
        }
    }

    /** The command lines in {@code text}; returns the last command named, or null. */
    private String commandLinesOf(String where, String text) {
        String last = null;
        for (Matcher m = COMMAND.matcher(text); m.find(); ) {
            last = m.group(1);
            commandLines.add(new CommandLineUse(where, last, text.substring(m.end())));
            sectionCommands.add(last);
        }
        return last;
    }

    /** One paragraph of prose: its spans' command lines and its default claims; returns the command last named. */
    private String prose(String where, String text, String command) {
        for (Matcher m = SPAN.matcher(text); m.find(); ) commandLinesOf(where, m.group(1));
        for (Matcher m = COMMAND.matcher(text); m.find(); ) sectionCommands.add(m.group(1));
        if (!text.startsWith("|")) {
            for (Matcher m = OPTION_SPAN.matcher(text); m.find(); ) proseOptions.add(new ProseOption(where, m.group(1), sectionCommands));
        }
        // in the order they come: commands named (in spans or not) and backticked options
        Matcher named = COMMAND.matcher(text);
        int nextNamed = named.find() ? named.start() : Integer.MAX_VALUE;
        for (Matcher option = OPTION_SPAN.matcher(text); option.find(); ) {
            while (nextNamed < option.start()) {
                command = named.group(1);
                nextNamed = named.find() ? named.start() : Integer.MAX_VALUE;
            }
            if (command == null) continue;
            String value = claimedDefault(option.group(2), tail(text, option.end()));
            if (value != null) defaults.add(new DefaultClaim(where, command, option.group(1), value));
        }
        while (nextNamed != Integer.MAX_VALUE) {
            command = named.group(1);
            nextNamed = named.find() ? named.start() : Integer.MAX_VALUE;
        }
        return command;
    }

    /** The text after an option's span that may speak of it: up to the next backticked option or the sentence's end. */
    private static String tail(String text, int from) {
        String rest = text.substring(from, Math.min(text.length(), from + 100));
        Matcher next = OPTION_SPAN.matcher(rest);
        if (next.find()) rest = rest.substring(0, next.start());
        Matcher end = SENTENCE_END.matcher(rest);
        if (end.find()) rest = rest.substring(0, end.start());
        return rest;
    }

    /** The default {@code tail} claims for the option (whose span carried {@code ownValue}, or null), or null for none. */
    static String claimedDefault(String ownValue, String tail) {
        if (!tail.toLowerCase(Locale.ROOT).contains("default")) return null;
        if (ownValue != null && OWN_VALUE_IS_DEFAULT.matcher(tail).find()) return ownValue.trim();
        Matcher span = VALUE_SPAN_IS_DEFAULT.matcher(tail);
        if (span.find()) return span.group(1).trim();
        Matcher then = DEFAULT_THEN_VALUE.matcher(tail);
        if (then.find()) return then.group(1).trim();
        Matcher by = VALUE_BY_DEFAULT.matcher(tail);
        if (by.find()) return by.group(1).trim();
        return null;
    }

    /**
     * The words of a default that the help must state, normalized: lower case, {@code 20 000} as {@code 20000},
     * {@code 4 KiB} and {@code 4K} as {@code 4k}, {@code 20 s} as {@code 20s}; small words dropped.
     */
    static List<String> valueWords(String value) {
        List<String> words = new ArrayList<>();
        for (String w : words(value)) {
            if (!STOP_WORDS.contains(w)) words.add(w);
        }
        return words;
    }

    /** {@link #normalize}d text split into words. */
    static List<String> words(String text) {
        List<String> words = new ArrayList<>();
        for (String w : normalize(text).split("[^a-z0-9.]+|\\.\\.+|\\.(?![0-9])")) {
            if (!w.isEmpty()) words.add(w);
        }
        return words;
    }

    static String normalize(String text) {
        String s = text.toLowerCase(Locale.ROOT);
        s = s.replaceAll("(\\d)[ ,\u202f](\\d{3})\\b", "$1$2");
        s = s.replaceAll("\\b(\\d+(?:\\.\\d+)?)\\s*(k|m|g)(?:i?b)?\\b", "$1$2");
        s = s.replaceAll("\\b(\\d+)\\s*(ms|s)\\b", "$1$2");
        return s;
    }

    private static final java.util.Set<String> STOP_WORDS = java.util.Set.of("to", "and", "or", "a", "an", "the", "of", "at",
            "per", "for", "in", "on", "by", "is", "each", "factor", "as", "it");
}
