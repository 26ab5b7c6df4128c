"""The Russian text of the course, for grading/build_source.py: what every notebook shares here, each assignment's own
in `aNN.py`. Texts are keyed by the fingerprint of their English (`build_source.fingerprint`), code fragments by the
English fragment itself; terms stay in English as the source lesson keeps them (ClusterIP, EndpointSlice, kube-proxy).
"""
from grading.build_source import Translation

COMMON = Translation(
    text={
        # How this notebook is graded (after the title of every notebook)
        "f705dcd2": """
*Как проверяется этот ноутбук.* Ячейки с пометкой «ТВОЙ КОД ЗДЕСЬ» — твои; ячейки после них — тесты. Автопроверка
запускает их ещё раз (некоторые — с дополнительными скрытыми проверками) на встроенном кластере `sim` с
фиксированным seed, так что твоя работа где угодно получит одни и те же баллы. Упавший тест говорит, что не так и
куда смотреть: запусти его, прочитай сообщение, исправь свою ячейку и перед сдачей прогони всё заново с начала
(Kernel ▸ Restart Kernel and Run All Cells…).""",
        # Your task (before the task card)
        "6f9681c8": """
## Твоё задание

Некоторые имена и числа в этом задании — только твои: ячейка ниже показывает их на карточке. Где в тексте сказано
*твой* порт, *твоя* нода или *твоё* число, имеется в виду значение с карточки. В коде пиши его как `task.<имя>`
(например, `task.service_port`), чтобы код говорил, что он значит.""",
        # The cluster now (before the picture, last in every notebook)
        "6ac0541b": """
## Кластер сейчас

Схема ниже живая, пока ты работаешь; в отзыве о проверке будет её последнее состояние.""",
        # RUBRICS.md
        "e619eee5": """
# Критерии оценки ответов, проверяемых вручную

Этот файл собирает `grading/build_source.py` из исходных ноутбуков; проверяющие держат его открытым рядом с
formgrader. Образцовый ответ каждого вопроса лежит и в `source/` (из версии для студентов он убран).""",
        "e246eadd": "Образцовый ответ.",
        "8e97415b": "Критерии.",
        # The word after a question's points in RUBRICS.md: one, few and many (1 балл, 3 балла, 5 баллов).
        "c54a061d": "балл|балла|баллов",
    },
    code={
        '# The autograder always runs this on the embedded "sim" cluster with seed 0.':
            '# Автопроверка всегда выполняет это на встроенном кластере "sim" с seed 0.',
        'print("checks passed")': 'print("проверки пройдены")',
    },
)
