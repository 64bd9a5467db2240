package io.hcomm4j.cli;

import io.hcomm4j.monitor.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs of {@code hcomm perf} saved with {@code --format csv} or {@code --format json}, read back for
 * {@code --plot FILE.png --compare A,B}: each becomes a named list of rows that the plot overlays.
 */
final class PerfRuns {
    /**
     * One saved run.
     *
     * @param label what the plot's legend calls it: the file's name without its extension
     * @param rows  its rows
     */
    record Run(String label, List<PerfReport.Row> rows) {
    }

    private PerfRuns() {
    }

    /**
     * Reads {@code file}: JSON when its first character is '{', else CSV (the header line {@link PerfReport#CSV_HEADER}
     * first; '#' lines, which a redirect of stderr may have mixed in, are skipped).
     *
     * @throws IllegalArgumentException naming the file and what is wrong with it
     */
    static Run read(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new IllegalArgumentException(file + ": cannot read it (" + e + ")");
        }
        String name = file.getFileName().toString();
        String label = name.contains(".") ? name.substring(0, name.lastIndexOf('.')) : name;
        try {
            List<PerfReport.Row> rows = text.stripLeading().startsWith("{") ? json(text) : csv(text);
            if (rows.isEmpty()) throw new IllegalArgumentException("it has no rows");
            return new Run(label, rows);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + " is not a saved hcomm perf run (--format csv or json): " + e.getMessage());
        }
    }

    private static List<PerfReport.Row> json(String text) {
        if (!(Json.parse(text) instanceof Map<?, ?> doc) || !(doc.get("rows") instanceof List<?> list)) {
            throw new IllegalArgumentException("no \"rows\" list in the JSON");
        }
        List<PerfReport.Row> rows = new ArrayList<>();
        for (Object o : list) rows.add(PerfJson.row(o));
        return rows;
    }

    private static List<PerfReport.Row> csv(String text) {
        List<PerfReport.Row> rows = new ArrayList<>();
        boolean header = false;
        int lineNo = 0;
        for (String line : text.split("\\R")) {
            lineNo++;
            if (line.isBlank() || line.startsWith("#")) continue;
            if (!header) {
                if (!line.trim().equals(PerfReport.CSV_HEADER)) {
                    throw new IllegalArgumentException("line " + lineNo + " is not the CSV header " + PerfReport.CSV_HEADER);
                }
                header = true;
                continue;
            }
            String[] c = line.trim().split(",", -1);
            if (c.length != 12) throw new IllegalArgumentException("line " + lineNo + " has " + c.length + " fields, not 12");
            try {
                rows.add(new PerfReport.Row(c[0], c[1], Integer.parseInt(c[2]), Long.parseLong(c[3]), Long.parseLong(c[4]), c[5],
                        c[6], Integer.parseInt(c[7]), Double.parseDouble(c[8]), Double.parseDouble(c[9]), Double.parseDouble(c[10]),
                        Long.parseLong(c[11])));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("line " + lineNo + ": " + e.getMessage());
            }
        }
        if (!header) throw new IllegalArgumentException("no CSV header " + PerfReport.CSV_HEADER);
        return rows;
    }
}
