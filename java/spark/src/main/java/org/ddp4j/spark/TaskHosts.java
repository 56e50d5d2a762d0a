package org.ddp4j.spark;

import java.util.ArrayList;
import java.util.List;

/**
 * Where the tasks of a barrier stage run, as {@code BarrierTaskContext.getTaskInfos()} tells every
 * task (ordered by partition id), and what follows for one rank: torchrun's LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK and GROUP_WORLD_SIZE, with the tasks on one host as one node
 * (nodes numbered in the order their first task appears).
 */
final class TaskHosts {
    private final List<String> hosts;

    /** @param addresses each task's executor address, {@code host} or {@code host:port}, by partition id */
    TaskHosts(List<String> addresses) {
        List<String> h = new ArrayList<>();
        for (String a : addresses) {
            h.add(hostOf(a));
        }
        this.hosts = List.copyOf(h);
    }

    /**
     * The host part of an executor address: {@code host:port} loses its port; a bracketed IPv6
     * {@code [::1]:port} becomes {@code ::1}; a bare IPv6 address (more than one ':') stays whole.
     */
    static String hostOf(String address) {
        String a = address.trim();
        if (a.startsWith("[")) {
            int close = a.indexOf(']');
            return close > 0 ? a.substring(1, close) : a;
        }
        int colon = a.indexOf(':');
        if (colon >= 0 && colon == a.lastIndexOf(':') && a.substring(colon + 1).chars().allMatch(Character::isDigit)) {
            return a.substring(0, colon);
        }
        return a;
    }

    int worldSize() {
        return hosts.size();
    }

    String host(int rank) {
        return hosts.get(rank);
    }

    /** The rank's index among the ranks on its host. */
    int localRank(int rank) {
        int n = 0;
        for (int j = 0; j < rank; j++) {
            n += hosts.get(j).equals(hosts.get(rank)) ? 1 : 0;
        }
        return n;
    }

    /** How many ranks share the rank's host. */
    int localWorldSize(int rank) {
        return (int) hosts.stream().filter(hosts.get(rank)::equals).count();
    }

    /** The index of the rank's host among the distinct hosts, in order of first appearance. */
    int groupRank(int rank) {
        return distinct().indexOf(hosts.get(rank));
    }

    /** How many distinct hosts the stage runs on. */
    int groupWorldSize() {
        return distinct().size();
    }

    private List<String> distinct() {
        return hosts.stream().distinct().toList();
    }
}
