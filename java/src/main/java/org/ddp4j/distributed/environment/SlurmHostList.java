package org.ddp4j.distributed.environment;

import java.util.ArrayList;
import java.util.List;

/**
 * Expands SLURM's compressed host lists ({@code SLURM_JOB_NODELIST}, {@code SLURM_STEP_NODELIST}),
 * as {@code scontrol show hostnames} does, without needing scontrol on the compute node.
 *
 * <p>A list is hosts separated by commas; a host may hold bracketed ranges, each a comma-separated
 * list of numbers or {@code lo-hi} ranges, whose zero padding is kept: {@code node[01-03,07],gpu3}
 * is {@code node01, node02, node03, node07, gpu3}. Several brackets in one host multiply out, the
 * last varying fastest: {@code r[1-2]n[1-2]} is {@code r1n1, r1n2, r2n1, r2n2}.
 */
public final class SlurmHostList {
    /** More hosts than any cluster has: a bound so that a typo such as {@code n[1-999999999]} fails fast. */
    static final int MAX_HOSTS = 1 << 20;

    private SlurmHostList() {}

    /**
     * All hosts of a compressed list, in SLURM's order.
     *
     * @param list e.g. {@code "node[01-04,07],gpu3"}
     * @return the host names, e.g. {@code [node01, node02, node03, node04, node07, gpu3]}
     * @throws IllegalArgumentException for an empty list or host, an unclosed or nested bracket, a
     *     range that is not {@code lo-hi} with {@code lo <= hi} of decimal digits, or more than 2^20 hosts
     */
    public static List<String> expand(String list) {
        List<String> hosts = expand(list, MAX_HOSTS + 1); // one more than allowed tells "too many" from "exactly"
        if (hosts.size() > MAX_HOSTS) {
            throw new IllegalArgumentException("host list \"" + list.trim() + "\" has more than " + MAX_HOSTS + " hosts");
        }
        return hosts;
    }

    /**
     * The first host of a compressed list: where rank 0 of a step runs under SLURM's block and
     * cyclic distributions. The brackets of the whole list are checked; only the first host is expanded.
     *
     * @param list e.g. {@code "node[01-04,07],gpu3"}
     * @return e.g. {@code node01}
     * @throws IllegalArgumentException as {@link #expand(String)}
     */
    public static String first(String list) {
        return expand(list, 1).get(0);
    }

    private static List<String> expand(String list, int limit) {
        if (list == null || list.isBlank()) {
            throw new IllegalArgumentException("empty host list");
        }
        String text = list.trim();
        List<String> hosts = new ArrayList<>();
        for (String host : splitTopLevel(text)) {
            if (host.isEmpty()) {
                throw new IllegalArgumentException("empty host name in host list \"" + text + "\"");
            }
            List<List<String>> parts = parseHost(host, text, limit);
            appendProduct(parts, 0, new StringBuilder(), hosts, limit);
            if (hosts.size() >= limit) {
                break;
            }
        }
        return hosts;
    }

    /** Splits at the commas outside brackets, checking that brackets pair up and do not nest. */
    private static List<String> splitTopLevel(String text) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '[') {
                if (depth++ > 0) {
                    throw new IllegalArgumentException("nested '[' at position " + i + " of host list \"" + text + "\"");
                }
            } else if (c == ']') {
                if (depth-- == 0) {
                    throw new IllegalArgumentException("']' without '[' at position " + i + " of host list \""
                            + text + "\"");
                }
            } else if (c == ',' && depth == 0) {
                out.add(text.substring(start, i).trim());
                start = i + 1;
            }
        }
        if (depth != 0) {
            throw new IllegalArgumentException("unclosed '[' in host list \"" + text + "\"");
        }
        out.add(text.substring(start).trim());
        return out;
    }

    /**
     * A host as alternating pieces: literal text (one choice) and brackets (their numbers, padded,
     * at most {@code limit} of each: the first {@code limit} hosts need no more).
     */
    private static List<List<String>> parseHost(String host, String text, int limit) {
        List<List<String>> parts = new ArrayList<>();
        int i = 0;
        while (i < host.length()) {
            int open = host.indexOf('[', i);
            if (open < 0) {
                parts.add(List.of(host.substring(i)));
                break;
            }
            if (open > i) {
                parts.add(List.of(host.substring(i, open)));
            }
            int close = host.indexOf(']', open);
            parts.add(parseRanges(host.substring(open + 1, close), text, limit));
            i = close + 1;
        }
        return parts;
    }

    /**
     * {@code 01-03,07} to {@code [01, 02, 03, 07]}, the width of each lower bound kept; all ranges
     * are checked, the first {@code limit} numbers listed.
     */
    private static List<String> parseRanges(String ranges, String text, int limit) {
        if (ranges.isBlank()) {
            throw new IllegalArgumentException("empty brackets [] in host list \"" + text + "\"");
        }
        List<String> out = new ArrayList<>();
        long count = 0;
        for (String range : ranges.split(",", -1)) {
            String r = range.trim();
            int dash = r.indexOf('-');
            String lo = dash < 0 ? r : r.substring(0, dash).trim();
            String hi = dash < 0 ? r : r.substring(dash + 1).trim();
            if (!isDigits(lo) || !isDigits(hi)) {
                throw new IllegalArgumentException("\"" + r + "\" in host list \"" + text + "\" is not a number or"
                        + " a range lo-hi of numbers");
            }
            long from;
            long to;
            try {
                from = Long.parseLong(lo);
                to = Long.parseLong(hi);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("range \"" + r + "\" in host list \"" + text + "\" is too large");
            }
            if (to < from) {
                throw new IllegalArgumentException("range \"" + r + "\" in host list \"" + text + "\" runs backwards");
            }
            count += to - from + 1;
            if (count > MAX_HOSTS) {
                throw new IllegalArgumentException("host list \"" + text + "\" has more than " + MAX_HOSTS + " hosts");
            }
            for (long n = from; n <= to && out.size() < limit; n++) {
                out.add(pad(n, lo.length()));
            }
        }
        return out;
    }

    /** Appends the hosts that {@code parts} multiply out to, stopping once {@code hosts} holds {@code limit}. */
    private static void appendProduct(List<List<String>> parts, int index, StringBuilder prefix, List<String> hosts,
            int limit) {
        if (hosts.size() >= limit) {
            return;
        }
        if (index == parts.size()) {
            hosts.add(prefix.toString());
            return;
        }
        int length = prefix.length();
        for (String choice : parts.get(index)) {
            prefix.append(choice);
            appendProduct(parts, index + 1, prefix, hosts, limit);
            prefix.setLength(length);
            if (hosts.size() >= limit) {
                return;
            }
        }
    }

    private static boolean isDigits(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private static String pad(long n, int width) {
        String digits = Long.toString(n);
        return digits.length() >= width ? digits : "0".repeat(width - digits.length()) + digits;
    }
}
