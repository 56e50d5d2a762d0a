package org.ddp4j.distributed;

import java.util.List;
import org.ddp4j.tensor.Tensor;

/**
 * What {@link Distributed#newGroup} returns on a rank that is not in the group's list: PyTorch's
 * {@code GroupMember.NON_GROUP_MEMBER}. It knows the members and the backend; {@link #rank()} is
 * -1, and every collective throws an {@link IllegalStateException} that names this rank and the
 * members, instead of waiting for peers that will never call it with this rank.
 */
final class NonMemberGroup extends ProcessGroup {
    private final int globalRank;
    private final List<Integer> ranks;
    private final String backend;

    NonMemberGroup(int globalRank, List<Integer> ranks, String backend) {
        this.globalRank = globalRank;
        this.ranks = List.copyOf(ranks);
        this.backend = backend;
    }

    /** -1, as PyTorch's {@code get_rank(group)} on a non-member. */
    @Override
    public int rank() {
        return -1;
    }

    @Override
    public int size() {
        return ranks.size();
    }

    @Override
    public String backend() {
        return backend;
    }

    @Override
    public List<Integer> ranks() {
        return ranks;
    }

    @Override
    public boolean isMember() {
        return false;
    }

    private IllegalStateException notMember(String op) {
        return new IllegalStateException(op + ": rank " + globalRank + " is not a member of this group (default-group"
                + " ranks " + ranks + "); only members may call its collectives: check group.isMember() first");
    }

    @Override
    public Work allReduce(Tensor tensor, ReduceOp op) {
        throw notMember("allReduce");
    }

    @Override
    public Work broadcast(Tensor tensor, int src) {
        throw notMember("broadcast");
    }

    @Override
    public Work allGather(List<Tensor> outputs, Tensor input) {
        throw notMember("allGather");
    }

    @Override
    public Work allGatherIntoTensor(Tensor output, Tensor input) {
        throw notMember("allGatherIntoTensor");
    }

    @Override
    public Work barrier() {
        throw notMember("barrier");
    }

    @Override
    public Work reduce(Tensor tensor, int dst, ReduceOp op) {
        throw notMember("reduce");
    }

    @Override
    public Work reduceScatter(Tensor output, List<Tensor> inputs, ReduceOp op) {
        throw notMember("reduceScatter");
    }

    @Override
    public Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        throw notMember("reduceScatterTensor");
    }

    @Override
    public Work send(Tensor tensor, int dst, int tag) {
        throw notMember("send");
    }

    @Override
    public Work recv(Tensor tensor, int src, int tag) {
        throw notMember("recv");
    }

    /** Nothing to release. */
    @Override
    public void close() {}

    @Override
    public String toString() {
        return "ProcessGroup(non-member: rank " + globalRank + " is not in " + ranks + ", " + backend + ")";
    }
}
