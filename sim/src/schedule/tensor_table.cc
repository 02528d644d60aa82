// The tensor table and the partition layout every builder records in its schedule (schedule.h
// TensorInfo, Layout): the model's params, their gradient buffers, and the plan_partition options
// and results of the plan the schedule was built for. O(tensors + groups).
#include <algorithm>
#include <vector>

#include "schedule/builders.h"

namespace zerosim::schedule {

void fill_tensor_table(Schedule& s, const ScheduleInput& in,
                       const std::vector<std::uint32_t>& grad_buf) {
  const ModelDesc& m = *in.model;
  const PartitionPlan& plan = *in.plan;
  s.tensors.clear();
  s.tensors.reserve(m.params.size());
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    const ParamTensor& t = m.params[p];
    TensorInfo ti;
    ti.name = t.name;
    ti.shape = t.shape;
    ti.numel = t.numel;
    ti.dtype = s.meta.lp;
    ti.trainable = t.trainable;
    ti.grad = p < grad_buf.size() ? grad_buf[p] : kNone;
    if (p < plan.param_group.size() && plan.param_group[p] != PartitionPlan::kNoGroup)
      ti.group = plan.param_group[p];
    s.tensors.push_back(std::move(ti));
  }
  Layout& l = s.layout;
  l = Layout{};
  l.stage = plan.stage;
  l.world = plan.world;
  l.round_robin = plan.round_robin;
  l.sub_group_size = in.ds->zero.sub_group_size;
  l.param_persistence_threshold = in.ds->zero.param_persistence_threshold;
  l.model_persistence_threshold = in.ds->zero.model_persistence_threshold;
  for (const FlatGroup& fg : plan.groups) {
    GroupLayout g;
    g.params = fg.params;
    g.flat_order = fg.flat_order;
    g.numel = fg.numel;
    g.padding = fg.padding;
    g.aligned = fg.aligned;
    g.partition = fg.partition;
    for (std::size_t i = 0; i < fg.flat_order.size(); ++i)
      if (fg.flat_order[i] < s.tensors.size())
        s.tensors[fg.flat_order[i]].flat_offset = fg.flat_offset[i];
    l.groups.push_back(std::move(g));
  }
  if (plan.stage != 3) return;
  // Stage 3 keeps no flat groups: a group's params are its sub-groups' params, in order.
  for (std::uint32_t i = 0; i < plan.sub_groups.size(); ++i) {
    const SubGroup& sg = plan.sub_groups[i];
    if (l.groups.size() <= sg.group) l.groups.resize(std::size_t{sg.group} + 1);
    auto& params = l.groups[sg.group].params;
    params.insert(params.end(), sg.params.begin(), sg.params.end());
    for (std::uint32_t p : sg.params)
      if (p < s.tensors.size()) s.tensors[p].sub_group = i;
    l.sub_groups.push_back({sg.group, sg.params, sg.partition_numel});
  }
  for (std::uint32_t p = 0; p < s.tensors.size() && p < plan.s3.size(); ++p)
    s.tensors[p].persistent = plan.s3[p].persistent;
}

}  // namespace zerosim::schedule
