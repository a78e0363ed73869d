"""What ``progress`` says, in English and Chinese: the learner's one-page summary
(``lessons.common.progress``). Numbers are formatted once, by the code that passes them."""

TEXT = {
    "title": {"en": "Parallelism Lab: my progress", "zh": "Parallelism Lab：我的学习记录"},
    "record": {"en": "Record: {path}, since {since}.", "zh": "记录文件：{path}，始于 {since}。"},
    "empty": {"en": "Nothing recorded yet: run an exercise checker or a drill in the lab.",
              "zh": "还没有记录：在实验里运行一个练习检查或一次面试练习即可开始。"},
    "off": {"en": "The record is off (PARLAB_RECORD=off): nothing is kept.",
            "zh": "记录已关闭（PARLAB_RECORD=off）：什么都不会保存。"},
    "exercises": {"en": "Exercises passed", "zh": "通过的练习"},
    "lesson_line": {"en": "{lesson}: {passed} of {total} passed{missing}",
                    "zh": "{lesson}：{total} 个中通过 {passed} 个{missing}"},
    "not_yet": {"en": " (not yet: {names})", "zh": "（未通过：{names}）"},
    "drill": {"en": "Interview drill", "zh": "面试练习"},
    "drill_line": {"en": "{topic}: {first} of {asked} right on the first try, median {median} s to answer",
                   "zh": "{topic}：{asked} 题中首次答对 {first} 题，作答时间中位数 {median} 秒"},
    "due": {"en": "Due for review now: {n} question(s) ({topics}).",
            "zh": "现在该复习：{n} 道题（{topics}）。"},
    "none_due": {"en": "Nothing due for review now.", "zh": "目前没有需要复习的题。"},
    "measured": {"en": "Measured on my own machine", "zh": "在我自己的机器上测得"},
    "measure_line": {"en": "{name}: {value} {unit} ({when}; {device})",
                     "zh": "{name}：{value} {unit}（{when}；{device}）"},
    "cv": {"en": "For a CV", "zh": "写进简历"},
    "cv_built": {"en": "Implemented {parts} from scratch in PyTorch and verified each against a "
                       "single-device reference (loss, gradients and parameters after several steps).",
                 "zh": "用 PyTorch 从零实现了{parts}，并逐一与单卡参考实现对齐验证"
                       "（多步优化后的 loss、梯度与参数）。"},
    "cv_measured": {"en": "Measured {what} on {device}.", "zh": "在 {device} 上实测了{what}。"},
    "cv_drill": {"en": "Answered {asked} interview questions on distributed training, "
                       "{share} right on the first try.",
                 "zh": "完成 {asked} 道分布式训练面试题，首次答对率 {share}。"},
    "sep": {"en": ", ", "zh": "、"},
    # the lessons, as a CV names what was built in them
    "lesson_l00_collectives": {"en": "collectives (ring all-reduce)", "zh": "集合通信（ring all-reduce）"},
    "lesson_l01_data_parallel": {"en": "data parallelism with ZeRO", "zh": "数据并行与 ZeRO"},
    "lesson_l02_tensor_parallel": {"en": "tensor parallelism with sequence parallelism",
                                   "zh": "张量并行与序列并行"},
    "lesson_l03_pipeline_parallel": {"en": "pipeline parallelism (GPipe, 1F1B)", "zh": "流水线并行（GPipe、1F1B）"},
    "lesson_l04_expert_parallel": {"en": "expert parallelism (MoE)", "zh": "专家并行（MoE）"},
    "lesson_l05_context_parallel": {"en": "context parallelism (ring attention, Ulysses)",
                                    "zh": "上下文并行（ring attention、Ulysses）"},
    "lesson_l06_3d_parallel": {"en": "3D parallelism", "zh": "3D 并行"},
    "lesson_l07_mixed_precision": {"en": "mixed precision (loss scaling)", "zh": "混合精度（loss scaling）"},
    "lesson_l08_checkpoints_and_failures": {"en": "distributed checkpoints and failure recovery",
                                            "zh": "分布式检查点与故障恢复"},
    "lesson_l09_the_whole_answer": {"en": "parallel layouts", "zh": "并行布局"},
}
