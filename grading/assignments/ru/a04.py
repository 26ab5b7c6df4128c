"""Задание 4 по-русски (grading/assignments/a04.py): правила kube-proxy в режиме iptables, тот же Service в nftables
и IPVS."""
from grading.build_source import Translation

#: Exercise 5 (nftables) on its own, so that a change of its English is a change of this one entry.
NFTABLES_TEXT = {
    "93f75679": """
## Упражнение 5: тот же сервис в режиме nftables (2 балла)

Переключи kube-proxy на nftables через `lab.set_proxy_mode("nftables")` (это меняет ConfigMap `kube-proxy` и
перезапускает поды kube-proxy, как на настоящем кластере). В новых правилах нет цепочки вероятностей, по которой
надо пройти: цепочка сервиса `service-…-default/web/tcp/http` одним правилом делает DNAT на случайный эндпоинт,
`meta l4proto tcp dnat ip addr . port to numgen random mod N map { … }`. Запиши в `numgen_rule` эту строку из
`lab.proxy_rules("lab-worker")`.""",
}
NFTABLES_CODE = {
    'f"{task.scale_to} endpoints: mod {task.scale_to}"': 'f"эндпоинтов {task.scale_to}, значит, mod {task.scale_to}"',
}

TRANSLATION = Translation(
    text={
        "10ff33cc": "Задание 4: читаем правила kube-proxy",
        "9d232557": """
kube-proxy не проксирует трафик через себя. Он следит за объектами Service и EndpointSlice и пишет правила в ядро
каждой ноды, а ядро превращает пакет, отправленный на ClusterIP, в пакет к одному из подов. `lab.proxy_rules(node)`
печатает эти правила ровно так, как их показывает нода: `iptables-save`, `nft list ruleset` или `ipvsadm -Ln`
вместе с несколькими правилами iptables, которые всё ещё нужны IPVS. Здесь ты прочитаешь их во всех трёх
режимах.""",
        "5b95083b": "Ячейка ниже запускает `web` с твоим числом реплик (`task.replicas`) за ClusterIP-сервисом.",
        # Exercise 1
        "1a604685": """
## Упражнение 1: цепочка сервиса (2 балла)

Запиши в `rules` результат `lab.proxy_rules("lab-worker")` (режим iptables). В таблице `nat` в цепочке
`KUBE-SERVICES` на каждый порт сервиса есть одно правило с комментарием `"<namespace>/<сервис>:<имя порта> cluster
IP"`, которое переходит в цепочку `KUBE-SVC-…` этого порта. Запиши в `svc_chain` имя цепочки для
`default/web:http`, найденное кодом, а не переписанное руками (имя — это хеш, а код тебе ещё понадобится).""",
        # Exercise 2
        "ee67e1b7": """
## Упражнение 2: по цепочке на эндпоинт (1 балл)

Цепочка `KUBE-SVC-…` сначала помечает для маскарадинга трафик, пришедший не из сети подов, а дальше в ней по
одному правилу на эндпоинт; каждое переходит в цепочку `KUBE-SEP-…`, которая делает DNAT на свой под. Запиши в
`sep_chains` список имён этих `KUBE-SEP-…` в порядке правил.""",
        # Exercise 3
        "8dbec760": """
## Упражнение 3: вероятности (3 балла)

Каждое правило эндпоинта, кроме последнего, несёт `-m statistic --mode random --probability p`. Запиши в
`probabilities` список `p` для каждого правила по порядку, с `1.0` для последнего (у него нет statistic, и всё,
что до него дошло, под него и попадает). Затем запиши в `shares` итоговую долю новых соединений, которую получает
каждый эндпоинт: правило видит только те соединения, которые прошли мимо всех правил перед ним.""",
        # Exercise 4
        "78139bcb": """
## Упражнение 4: масштабируем (2 балла)

Отскейль `web` до твоего нового числа реплик (`task.scale_to`) и дождись, пока у сервиса будет столько
готовых адресов. Не читая новых правил, вычисли вероятности, которые kube-proxy теперь пишет в цепочку
(правило `i`, считая с 0, из `N`), и запиши их в `probabilities_scaled`. Потом выведи новую цепочку и сравни.""",
        **NFTABLES_TEXT,
        # Exercise 6
        "d32d2c2c": """
## Упражнение 6: и в режиме IPVS (3 балла)

Переключись на IPVS (`lab.set_proxy_mode("ipvs")`). Каждый ClusterIP:port становится виртуальным сервером IPVS,
а поды — его реальные серверы (real servers); `ipvsadm -Ln` их перечисляет. Запиши в `real_servers` список
реальных серверов вида
`ip:port` виртуального сервера `web`, а в `scheduler` — его планировщик (scheduler, слово после адреса
виртуального сервера).""",
        # Exercise 7
        "ffe3d4a4": """
## Упражнение 7: какие режимы масштабируются? (2 балла)

Запиши в `constant_lookup` множество режимов из `"iptables"`, `"nftables"` и `"ipvs"`, в которых поиск сервиса
для нового соединения *не* означает обход списка правил, который растёт с числом сервисов.""",
    },
    code={
        "# your number of replicas": "# твоё число реплик",
        '"one share per endpoint"': '"по одной доле на эндпоинт"',
        **NFTABLES_CODE,
        '"scheduler should be a string such as the one ipvsadm prints"':
            '"в scheduler должна быть строка, как её печатает ipvsadm"',
        '"answer with a set of mode names"': '"ответь множеством имён режимов"',
    },
)
