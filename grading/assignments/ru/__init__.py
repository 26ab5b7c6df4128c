"""The Russian text of the course, for grading/build_source.py: what every notebook shares here, each assignment's own
in `aNN.py`. Texts are keyed by the fingerprint of their English (`build_source.fingerprint`), code fragments by the
English fragment itself; terms stay in English as the source lesson keeps them (ClusterIP, EndpointSlice, kube-proxy).
"""
from grading.build_source import Translation

COMMON = Translation(
    text={
        # How this notebook is graded (after the title of every notebook)
        "f705dcd2": """
*Как проверяется этот ноутбук.* Ячейки с пометкой «ВАШ КОД ЗДЕСЬ» — ваши; ячейки после них — тесты, которые
автопроверка запускает ещё раз (некоторые — с дополнительными скрытыми проверками) на встроенном кластере `sim` с
фиксированным seed, поэтому ваша работа везде получает одни и те же баллы. Упавший тест говорит, что не так и куда
смотреть: запустите его, прочитайте сообщение, исправьте свою ячейку и перед сдачей выполните всё заново с начала
(Kernel ▸ Restart Kernel and Run All Cells…).""",
        # Your task (before the task card)
        "6f9681c8": """
## Ваше задание

Некоторые имена и числа в этом задании — только ваши: ячейка ниже показывает их на карточке. Где текст говорит
*ваш* порт, *ваша* нода или *ваше* число, имеется в виду значение с карточки; в коде пишите его как
`task.<имя>` (например, `task.service_port`), чтобы код говорил, что он значит.""",
        # The cluster now (before the picture, last in every notebook)
        "6ac0541b": """
## Кластер сейчас

Картинка ниже живая, пока вы работаете; в отзыве о проверке будет её последнее состояние.""",
        # RUBRICS.md
        "e619eee5": """
# Критерии оценки ответов, проверяемых вручную

Создан `grading/build_source.py` из исходных ноутбуков; проверяющие держат его открытым рядом с formgrader.
Каждый ответ хранит и свой образцовый ответ в `source/` (в версии для студентов его нет).""",
        "e246eadd": "Образцовый ответ.",
        "8e97415b": "Критерии.",
        "c54a061d": "б.",
    },
    code={
        '# The autograder always runs this on the embedded "sim" cluster with seed 0.':
            '# Автопроверка всегда выполняет это на встроенном кластере "sim" с seed 0.',
        'print("checks passed")': 'print("проверки пройдены")',
    },
)
