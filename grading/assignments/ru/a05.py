"""Задание 5 по-русски (grading/assignments/a05.py): пять сломанных сервисов — найти причину и починить."""
from grading.build_source import Translation

TRANSLATION = Translation(
    text={
        "c77466bb": "Задание 5: разбираемся со сломанными сервисами",
        "8a6d70c5": """
Пять сервисов сломаны, каждый — одним из способов, которыми сервисы ломаются в проде. Для каждого выясни, что не
так, знакомыми инструментами (`lab.get`, `lab.curl`, `lab.nslookup`, `lab.get("events")`, `lab.kubectl(...)`,
`lab.proxy_rules()`), запиши в переменную диагноза одну из `CAUSES` и почини, применив исправленные объекты.
Запросы идут из пода `client` (`source="pod/client"`).

В `CAUSES` пять причин: `"selector"` (сервис не выбирает ни одного пода), `"readiness"` (поды работают, но так и
не становятся Ready), `"targetPort"` (сервис пересылает на порт, который никто не слушает), `"nodePort"` (порт уже
занят) и `"keep-alive"` (долгие соединения остаются на том поде, куда попали первыми).

Порядок проверки такой. Есть ли у сервиса эндпоинты (`kubectl get endpointslices -l
kubernetes.io/service-name=…`)? Ни одного — сверь его селектор с метками подов. Есть, но не готовы — смотри
readiness-пробу и события `Unhealthy`. Готовы, а соединение отклонено (connection refused) — сверь `targetPort` с
портом, который слушает контейнер.""",
        # Problem 1
        "438f88a0": """
## Проблема 1: `shop` (3 балла)

`lab.curl("http://shop/", source="pod/client")` не проходит. Запиши `diagnosis_shop` и почини `shop` так,
чтобы он отвечал с обоих своих подов.""",
        # Problem 2
        "438f14b6": """
## Проблема 2: `cart` (3 балла)

Поды `cart` в состоянии Running, а запросы всё равно не проходят. Запиши `diagnosis_cart` и почини (nginx
отдаёт `/` на порту 80). Исправленный Deployment выкатывает новые поды: дождись, пока два из них станут
готовыми эндпоинтами.""",
        # Problem 3
        "8aea6e45": """
## Проблема 3: `pay` (3 балла)

`nslookup pay` работает, и у `pay` два готовых эндпоинта, но `lab.curl("http://pay/hostname",
source="pod/client")` получает отказ. Запиши `diagnosis_pay` и почини, сохранив у сервиса порт 80.""",
        # Problem 4
        "85a827b8": """
## Проблема 4: `admin` (4 балла)

Коллеги подготовили манифест `ADMIN_SVC`: он публикует Deployment `admin` на твоём NodePort
(`task.taken_node_port`). Примени его и поймай отказ API-сервера (`from labsupport import Invalid`;
`except Invalid as err`), а его сообщение сохрани в `admin_error` (`str(err)`). Потом запиши `diagnosis_admin` и
создай сервис так, чтобы его nodePort ни с кем не конфликтовал (пусть порт выберет API-сервер). Он должен отвечать
снаружи кластера на IP каждой ноды на своём nodePort.""",
        # Problem 5
        "b99d5fab": """
## Проблема 5: `api` (3 балла)

`api` отскейлили с одного пода до твоего числа подов (`task.api_replicas`), но `conn.request()` (открытое
соединение клиента) всегда попадает на один и тот же под. Попробуй `Counter(conn.request().body for _ in
range(30))` (`from collections import Counter`) и запиши `diagnosis_api`. Потом почини сторону клиента: закрой
`conn` и сделай по 30 запросов на под к `http://api/hostname` из `pod/client` так, чтобы kube-proxy мог их
распределить (каждый — своим соединением). Сохрани результаты этих запросов в том виде, в каком их вернул
`lab.curl`, в список `responses`, а ответы посчитай по подам (`.body` у `/hostname` — имя пода) в словарь
`hits`.""",
    },
    code={
        "# A client keeps one HTTP connection open to api while it still has one pod; then api scales out.":
            "# Клиент держит одно HTTP-соединение с api, пока у того один под; потом api масштабируется.",
        'f"diagnosis_shop should be one of {CAUSES}"': 'f"в diagnosis_shop должна быть одна из {CAUSES}"',
        'f"diagnosis_cart should be one of {CAUSES}"': 'f"в diagnosis_cart должна быть одна из {CAUSES}"',
        'f"diagnosis_pay should be one of {CAUSES}"': 'f"в diagnosis_pay должна быть одна из {CAUSES}"',
        'f"diagnosis_admin should be one of {CAUSES}"': 'f"в diagnosis_admin должна быть одна из {CAUSES}"',
        'f"diagnosis_api should be one of {CAUSES}"': 'f"в diagnosis_api должна быть одна из {CAUSES}"',
        "# where the pods listen: their --http-port": "# где слушают поды: их --http-port",
        '"keep the Service\'s port 80"': '"оставь у сервиса порт 80"',
        '"admin cannot share legacy\'s nodePort"': '"admin не может делить nodePort с legacy"',
        '"legacy must keep its nodePort: moving it out of admin\'s way is not the fix, admin should take a free port"':
            '"legacy должен сохранить свой nodePort: убрать его с дороги admin — не решение, admin должен занять '
            'свободный порт"',
        '"hits should count answers by pod name (the body of /hostname)"':
            '"в hits должны быть ответы, посчитанные по имени пода (тело ответа /hostname)"',
        '"close the pinned connection"': '"закрой прилипшее соединение"',
    },
    # The API server's own message: the test looks for it as Kubernetes prints it.
    keep=('"provided port is already allocated"', '\'Service "admin" is invalid\''),
)
