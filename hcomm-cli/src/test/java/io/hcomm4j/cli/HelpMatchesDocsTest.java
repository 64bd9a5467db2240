package io.hcomm4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The help texts against what README.md and docs/*.md say of the commands (issue 17): every option of an
 * {@code hcomm <command>} line in them exists, and every default they claim for an option is the one its
 * {@code --help} states (in the option's own text, or in a part of the help that names the option and says default).
 * How a claim is recognised is in {@link DocClaims}.
 */
class HelpMatchesDocsTest {
    private static final Path ROOT = repositoryRoot();
    private final Map<String, CommandSpec> specs = new LinkedHashMap<>();
    private final Map<String, CommandLine.Help> helps = new LinkedHashMap<>();

    HelpMatchesDocsTest() {
        Captured io = new Captured();
        CommandLine cl = HcommCli.commandLine(io.out, io.err, Map.of());
        for (String c : DocClaims.COMMANDS) {
            CommandLine sub = cl.getSubcommands().get(c);
            specs.put(c, sub.getCommandSpec());
            helps.put(c, sub.getHelp());
        }
    }

    @Test
    void everyOptionOfTheDocsCommandLinesExists() throws IOException {
        DocClaims docs = readDocs();
        assertThat(docs.commandLines()).as("command lines found in the docs").hasSizeGreaterThan(100);
        assertThat(optionProblems(docs)).isEmpty();
    }

    /**
     * Options of other programs that README.md names in sections about the commands: the JVM's flags, and those of the
     * examples (whose table is not read).
     */
    private static final java.util.Set<String> OTHER_PROGRAMS_OPTIONS = java.util.Set.of("--add-modules",
            "--enable-native-access", "--kill-prefill", "--kill-after");

    /** Every option README.md's prose names in a section about commands is an option of one of them. */
    @Test
    void everyOptionInTheReadmesProseExists() throws IOException {
        DocClaims readme = new DocClaims();
        readme.read("README.md", Files.readString(ROOT.resolve("README.md")));
        assertThat(readme.proseOptions()).filteredOn(o -> !o.commands().isEmpty()).as("options to check").hasSizeGreaterThan(30);
        assertThat(proseProblems(readme)).isEmpty();
    }

    /** Backticked options of sections about commands that none of those commands has. */
    private List<String> proseProblems(DocClaims docs) {
        List<String> problems = new ArrayList<>();
        for (DocClaims.ProseOption o : docs.proseOptions()) {
            if (o.commands().isEmpty() || OTHER_PROGRAMS_OPTIONS.contains(o.option())) continue;
            if (o.commands().stream().noneMatch(c -> specs.get(c).findOption(o.option()) != null)) {
                problems.add(o.where() + ": " + o.option() + " is an option of none of hcomm " + String.join(", ", o.commands()));
            }
        }
        return problems;
    }

    @Test
    void everyDefaultTheDocsClaimIsWhatTheHelpSays() throws IOException {
        DocClaims docs = readDocs();
        // the parser finds what it is meant to, so that an empty list of problems means something
        assertThat(docs.defaults()).extracting(c -> c.command() + " " + c.option() + " " + c.value())
                .contains("perf -n 2", "perf --batch 64", "perf --iters 20 000", "perf --window alloc", "perf --mem native",
                        "perf --jit-warmup auto", "launch --cpu-bind auto", "tune --warmup 20 s");
        assertThat(defaultProblems(docs)).isEmpty();
    }

    /** The checks fail where they should: a wrong default, an option that does not exist, a default never stated. */
    @Test
    void wrongClaimsAreFound() {
        DocClaims docs = new DocClaims();
        docs.read("made-up.md", """
                ## Measuring

                `hcomm perf transfer` times batches of `--batch` ops (default 65); `--no-such-option` (default 3).
                `hcomm launch` binds ranks (`--cpu-bind none`, the default).

                ```
                ./hcomm perf allreduce --iters 20 --fast -b 4K
                hcomm status --job 1 --init-method tcp://h:1 --nope
                ```
                """);
        assertThat(defaultProblems(docs)).hasSize(3).anySatisfy(p -> assertThat(p).contains("--batch", "65"))
                .anySatisfy(p -> assertThat(p).contains("--no-such-option"))
                .anySatisfy(p -> assertThat(p).contains("--cpu-bind", "none"));
        assertThat(optionProblems(docs)).hasSize(2).anySatisfy(p -> assertThat(p).contains("hcomm perf --fast"))
                .anySatisfy(p -> assertThat(p).contains("hcomm status --nope"));
        assertThat(proseProblems(docs)).singleElement().asString().contains("--no-such-option is an option of none of hcomm");
    }

    @Test
    void claimsAreReadInTheirForms() {
        assertThat(DocClaims.claimedDefault(null, " ranks (default 2)")).isEqualTo("2");
        assertThat(DocClaims.claimedDefault("alloc", ", the default: pool memory")).isEqualTo("alloc");
        assertThat(DocClaims.claimedDefault(null, " picks the buffers: `native` (default, ")).isEqualTo("native");
        assertThat(DocClaims.claimedDefault(null, " default 5, then as many")).isEqualTo("5");
        assertThat(DocClaims.claimedDefault(null, " bounds both, 20 s by default), each")).isEqualTo("20 s");
        assertThat(DocClaims.claimedDefault("median", " — its default, nccl-tests' mean")).isNull();
        assertThat(DocClaims.claimedDefault(null, " timed ones, and by default they are a function of ")).isEqualTo("and");
        assertThat(DocClaims.valueWords("and")).isEmpty(); // no value: not checked
        assertThat(DocClaims.valueWords("20 000")).containsExactly("20000");
        assertThat(DocClaims.valueWords("1 MiB")).containsExactly("1m");
        assertThat(DocClaims.valueWords("4K to 64M")).containsExactly("4k", "64m");
    }

    private DocClaims readDocs() throws IOException {
        DocClaims docs = new DocClaims();
        List<Path> files = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> md = Files.list(ROOT.resolve("docs"))) {
            md.filter(p -> p.getFileName().toString().endsWith(".md")).sorted().forEach(files::add);
        }
        for (Path f : files) docs.read(ROOT.relativize(f).toString(), Files.readString(f));
        return docs;
    }

    /** Options of the docs' command lines that the command does not have. */
    private List<String> optionProblems(DocClaims docs) {
        List<String> problems = new ArrayList<>();
        for (DocClaims.CommandLineUse use : docs.commandLines()) {
            CommandSpec spec = specs.get(use.command());
            String[] tokens = use.text().trim().split("\\s+");
            for (int i = 0; i < tokens.length; i++) {
                String t = tokens[i].replaceAll("^\\[|]$", "");
                if (endsTheCommand(t)) break;
                if (!t.matches("--?[a-zA-Z].*")) {
                    if (use.command().equals("launch")) break; // the ranks' COMMAND starts here
                    continue; // an operand (perf's OP) or an option's value
                }
                String name = t.contains("=") ? t.substring(0, t.indexOf('=')) : t;
                OptionSpec option = spec.findOption(name);
                if (option == null) {
                    problems.add(use.where() + ": hcomm " + use.command() + " " + name + " is not an option of it (in: "
                            + use.text().trim() + ")");
                } else if (option.arity().max() > 0 && !t.contains("=")) {
                    i++; // its value
                }
            }
        }
        return problems;
    }

    private static boolean endsTheCommand(String token) {
        return token.isEmpty() || token.equals("--") || token.startsWith("#") || token.startsWith("$(") || token.startsWith("2>")
                || token.matches("[|&;<>\\\\]+|\\.\\.\\.|…") || token.endsWith(";");
    }

    /** Claimed defaults that the help does not state, or of options that do not exist. */
    private List<String> defaultProblems(DocClaims docs) {
        List<String> problems = new ArrayList<>();
        for (DocClaims.DefaultClaim claim : docs.defaults()) {
            List<String> want = DocClaims.valueWords(claim.value());
            if (want.isEmpty()) continue; // "by default they are ...": no value claimed
            OptionSpec option = specs.get(claim.command()).findOption(claim.option());
            String says = claim.where() + ": hcomm " + claim.command() + " " + claim.option() + " (default " + claim.value() + ")";
            if (option == null) {
                problems.add(says + ": the command has no such option");
                continue;
            }
            String help = helpAbout(claim.command(), option);
            if (!statesDefault(DocClaims.words(help), want)) {
                problems.add(says + ": the help says " + (help.isBlank() ? "nothing about a default" : "'" + help + "'"));
            }
        }
        return problems;
    }

    /**
     * Whether each of {@code want} stands next to a "default" in {@code stated}: from 3 words before it ({@code auto
     * (default)}) to 8 after ({@code Default: by size (counter: 20000)}), so that a value the help names for another
     * reason does not pass for the default.
     */
    static boolean statesDefault(List<String> stated, List<String> want) {
        for (String w : want) {
            boolean near = false;
            for (int d = 0; d < stated.size() && !near; d++) {
                if (!stated.get(d).equals("default")) continue;
                for (int p = Math.max(0, d - 3); p <= Math.min(stated.size() - 1, d + 8) && !near; p++) near = stated.get(p).equals(w);
            }
            if (!near) return false;
        }
        return true;
    }

    /**
     * What {@code --help} says of {@code option}'s default: its own text, and the lines elsewhere in the help (other
     * options, description, footer; each with the line after it, as texts wrap) that name it and say "default".
     */
    private String helpAbout(String command, OptionSpec option) {
        CommandLine.Help help = helps.get(command);
        List<String> blocks = optionBlocks(help.optionList());
        StringBuilder about = new StringBuilder();
        List<String> elsewhere = new ArrayList<>();
        for (String block : blocks) {
            if (namesOf(block).stream().anyMatch(n -> List.of(option.names()).contains(n))) about.append(block).append(' ');
            else elsewhere.add(block);
        }
        String[] lines = (help.description() + "\n" + help.footer()).split("\n");
        for (int i = 0; i < lines.length; i++) elsewhere.add(lines[i] + (i + 1 < lines.length ? " " + lines[i + 1] : ""));
        for (String text : elsewhere) {
            boolean names = false;
            for (String n : option.names()) names |= Pattern.compile("(?<![\\w-])" + Pattern.quote(n) + "(?![\\w-])").matcher(text).find();
            if (names && text.toLowerCase(java.util.Locale.ROOT).contains("default")) about.append(text).append(' ');
        }
        return about.toString().replaceAll("\\s+", " ").trim();
    }

    /** The options list of a help, one text per option (its wrapped lines joined). */
    private static List<String> optionBlocks(String optionList) {
        List<String> blocks = new ArrayList<>();
        StringBuilder current = null;
        for (String line : optionList.split("\n")) {
            if (line.matches(" {2,6}-.*")) {
                if (current != null) blocks.add(current.toString());
                current = new StringBuilder(line.trim());
            } else if (current != null) {
                current.append(' ').append(line.trim());
            }
        }
        if (current != null) blocks.add(current.toString());
        return blocks;
    }

    /** The option names at the start of an option's block: {@code -w, --warmup-iters, --warmup=N  Untimed ...}. */
    private static List<String> namesOf(String block) {
        List<String> names = new ArrayList<>();
        for (String part : block.split("\\s{2,}")[0].split(",\\s*")) {
            String name = part.trim().replaceAll("[=\\[].*", "");
            if (name.startsWith("-")) names.add(name);
        }
        return names;
    }

    /** The repository's root: the first directory up from this module's that holds README.md and docs/. */
    private static Path repositoryRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("docs"))) return p;
        }
        throw new IllegalStateException("no README.md with docs/ above " + Path.of("").toAbsolutePath());
    }
}
